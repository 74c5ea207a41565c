import XCTest
@testable import FHIRCore

/// ``ChildLookup``, the flat child tables validation walks with, agrees with the metadata's
/// ``NameTable`` of children for every name of every context, whatever form the name's `String` takes.
final class ChildLookupTests: XCTestCase {
    private let meta = FHIRMetadata.r4

    func testEveryChildNameResolvesAsTheNameTableDoes() throws {
        let lookup = meta.childLookup
        var checked = 0
        for type in meta.typeNames {
            guard let index = meta.contextIndex(named: type), let definition = meta.context(at: index) else { continue }
            try checkContext(definition, at: index, lookup: lookup, checked: &checked)
        }
        // Backbone contexts: reached from their elements' resolved children.
        for type in meta.resourceTypes {
            for info in meta.elements(of: type) {
                guard let child = meta.child(info.isChoice ? info.name + FHIRMetadata.choiceSuffix(of: info.types[0]) : info.name, of: type),
                      child.isBackbone, let definition = meta.context(at: child.contextIndex)
                else { continue }
                try checkContext(definition, at: child.contextIndex, lookup: lookup, checked: &checked)
            }
        }
        XCTAssertGreaterThan(checked, 5_000)
    }

    private func checkContext(_ definition: ContextDefinition, at index: Int, lookup: ChildLookup, checked: inout Int) throws {
        let context = lookup.context(at: index)
        XCTAssertEqual(context.definitionCount, definition.elements.count)
        XCTAssertEqual(lookup.required(of: context).map { $0.takeUnretainedValue().path }, definition.required.map(\.path))
        for (name, child) in definition.children {
            // The name as a literal-like small string, as a long string in its own storage, and built
            // from a substring: each form must find the same slot.
            let forms = [String(decoding: Array(name.utf8), as: UTF8.self), String(("__" + name).dropFirst(2)),
                         (name + String(repeating: "x", count: 20)).prefix(name.utf8.count).description]
            for form in forms {
                let slot = try XCTUnwrap(lookup.child(named: form, in: context), "\(name) in \(child.info.path)")
                XCTAssertTrue(slot.pointee.resolved.takeUnretainedValue() === child, name)
                XCTAssertEqual(Int(slot.pointee.order), child.info.order)
                XCTAssertEqual(slot.pointee.maximum == -1 ? nil : Int(slot.pointee.maximum), child.info.max)
                XCTAssertEqual(slot.pointee.isChoice, child.info.isChoice)
                XCTAssertEqual(slot.pointee.isArray, child.info.isArray)
            }
            // A name one letter longer or shorter is not this child (unless the context has that one too).
            for other in [name + "x", String(name.dropLast())] where definition.children[other] == nil {
                XCTAssertNil(lookup.child(named: other, in: context), other)
            }
            checked += 1
        }
    }

    func testUnknownNamesAndContexts() {
        let lookup = meta.childLookup
        let patient = lookup.context(at: meta.contextIndex(named: "Patient") ?? -1)
        XCTAssertNil(lookup.child(named: "", in: patient))
        XCTAssertNil(lookup.child(named: "nonsense", in: patient))
        XCTAssertNil(lookup.child(named: "aVeryLongNameThatNoResourceHasAnywhere", in: patient))
        XCTAssertNotNil(lookup.child(named: "birthDate", in: patient))
        XCTAssertNil(lookup.child(named: "birthDate", in: lookup.context(at: -1)), "no context: no children")
        XCTAssertNil(lookup.child(named: "birthDate", in: lookup.context(at: Int.max)))
        XCTAssertEqual(lookup.context(at: -1).definitionCount, 0)
    }
}
