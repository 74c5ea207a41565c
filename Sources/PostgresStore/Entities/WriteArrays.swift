import Foundation
import NIOCore
import PostgresNIO

/// A PostgreSQL array whose elements may be NULL, bound as one parameter: the columns of many rows for one
/// `INSERT ... SELECT FROM unnest(...)` (postgres-nio encodes no NULL inside an array of its own).
///
/// It writes PostgreSQL's binary array format: dimensions (1, or 0 when empty), whether any element is
/// NULL, the element type, the length and lower bound, then each element as its length (-1 for NULL) and
/// bytes.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    var elements: [Element?]

    init(_ elements: [Element?]) {
        self.elements = elements
    }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count), as: Int32.self)
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            // The element's length, then its bytes.
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex, as: Int32.self)
        }
    }
}

extension Data {
    /// The bytes as postgres-nio binds a `bytea` array element.
    var byteBuffer: ByteBuffer { ByteBuffer(bytes: self) }
}
