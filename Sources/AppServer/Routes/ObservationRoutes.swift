import Foundation
import Hummingbird
import Mapping
import Pipeline
import Store

/// `POST /carekit/v1/observations`: readings the phone took, as FHIR Observations in HealthKitOnFHIR's
/// shape (one, an array, or a Bundle), for the token's patient only (Docs/readings.md).
///
/// The body is bounded as a push is (``AppRequestContext/maxUploadSize``, 413 past it) and read into
/// ``ReadingSample``s (400 when it is not JSON or not Observations at all); ``ReadingImport`` places and
/// stores them on the store's writer threads (``AsyncAppStore/write(_:)``), all in one transaction. The answer is 200 with
/// one result per reading (`stored` or `known`, and the outcomes it went to), or 422 naming each reading
/// refused (`index`, `path`, `reason`), nothing of the batch stored. No value of a reading is echoed in
/// an error.
struct ObservationRoutes {
    let store: any AsyncAppStore
    let kinds: ReadingKinds

    func register(on group: RouterGroup<AppRequestContext>) {
        group.post("observations") { request, context -> Response in
            let patientID = try context.patientID()
            var buffer = ByteBuffer()
            for try await chunk in request.body {
                guard buffer.readableBytes + chunk.readableBytes <= context.maxUploadSize else {
                    throw APIError(.contentTooLarge, code: "too-large", message: "a batch of readings is at most \(context.maxUploadSize) bytes")
                }
                buffer.writeImmutableBuffer(chunk)
            }
            let decoded: (samples: [ReadingSample], refusals: [ReadingRefusal])
            do {
                decoded = try ReadingDecoding.decode(Data(buffer: buffer))
            } catch {
                throw APIError.badRequest((error as? ReadingBatchUnreadable)?.description ?? "(top level): cannot be read")
            }
            let kinds = kinds
            let outcome: Result<ReadingImport.Report, ReadingImport.Refused>
            do {
                outcome = try await store.write { store in
                    do {
                        return .success(try ReadingImport(store: store, kinds: kinds).apply(decoded.samples, refusals: decoded.refusals, patientID: patientID))
                    } catch let refused as ReadingImport.Refused {
                        return .failure(refused)
                    }
                }
            } catch let error as StoreError {
                throw SyncRoutes.refusal(error)
            }
            switch outcome {
            case .success(let report):
                context.auditNote.set("\(decoded.samples.count) readings: \(report.stored) stored, \(report.known) known")
                return JSONResponse.make(try Self.encoder.encode(ReadingsAnswer(stored: report.stored, known: report.known, readings: report.readings)))
            case .failure(let refused):
                context.auditNote.set("\(decoded.samples.count + decoded.refusals.count) readings: \(Set(refused.refusals.map(\.index)).count) refused")
                let body = RefusedAnswer(
                    error: "refused", message: "readings of this batch were refused; nothing of it was stored", refused: refused.refusals)
                return JSONResponse.make(try Self.encoder.encode(body), status: .unprocessableContent)
            }
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

/// The 200 answer: how many readings were stored and known, and each reading's result.
struct ReadingsAnswer: Encodable {
    var stored: Int
    var known: Int
    var readings: [ReadingImport.Result]
}

/// The 422 answer: the error body every route answers with, and the readings refused.
struct RefusedAnswer: Encodable {
    var error: String
    var message: String
    var refused: [ReadingRefusal]
}
