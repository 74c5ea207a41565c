import CareModel
import FHIR
import Foundation

/// FHIR person datatypes to CareKit's: HumanName to PersonName, Address to PostalAddress,
/// ContactPoint to labeled phone numbers, messaging numbers, emails and other contact info, and a
/// CodeableConcept to the text a person reads.
enum PersonTransforms {
    /// The name: the first of `names` with use `official` or `usual` (else the first), its given names
    /// split into given and middle, prefixes and suffixes joined. Other names are reported.
    static func personName(_ names: [FHIRPathElementNode], notes: inout [MappingNote]) -> PersonName {
        guard !names.isEmpty else { return PersonName() }
        let preferred = names.first { ["official", "usual"].contains($0.element.childValue("use") ?? "") } ?? names[0]
        let name = preferred.element
        let given = name.children(named: "given").compactMap(\.value)
        var person = PersonName(
            namePrefix: joined(name.children(named: "prefix").compactMap(\.value)),
            givenName: given.first,
            middleName: given.count > 1 ? given.dropFirst().joined(separator: " ") : nil,
            familyName: name.childValue("family"),
            nameSuffix: joined(name.children(named: "suffix").compactMap(\.value)))
        if person.givenName == nil && person.familyName == nil, let text = name.childValue("text") {
            // Only text: CareKit shows the given and family names, so the whole text goes to the family name.
            person.familyName = text
        }
        if let nickname = names.first(where: { $0.element.childValue("use") == "nickname" }) {
            person.nickname = nickname.element.children(named: "given").first?.value ?? nickname.element.childValue("text")
        }
        let others = names.filter { $0.element != preferred.element && $0.element.childValue("use") != "nickname" }
        if !others.isEmpty {
            notes.append(MappingNote(.info, at: others[0].path ?? "name", "\(others.count) other name(s) not carried over (CareKit keeps one)"))
        }
        return person
    }

    /// The first address with use home (else the first), lines joined as the street.
    static func postalAddress(_ addresses: [FHIRPathElementNode], notes: inout [MappingNote]) -> PostalAddress? {
        guard !addresses.isEmpty else { return nil }
        let preferred = addresses.first { $0.element.childValue("use") == "home" } ?? addresses[0]
        let address = preferred.element
        if addresses.count > 1 {
            notes.append(MappingNote(.info, at: addresses[1].path ?? "address", "\(addresses.count - 1) other address(es) not carried over"))
        }
        var street = address.children(named: "line").compactMap(\.value).joined(separator: "\n")
        if street.isEmpty, let text = address.childValue("text") { street = text }
        let country = address.childValue("country") ?? ""
        return PostalAddress(
            street: street, city: address.childValue("city") ?? "", subAdministrativeArea: address.childValue("district") ?? "",
            state: address.childValue("state") ?? "", postalCode: address.childValue("postalCode") ?? "", country: country,
            isoCountryCode: country.count == 2 ? country.uppercased() : "")
    }

    /// Contact points by CareKit list: phone and SMS numbers, emails, and the rest (fax, pager, url).
    struct Telecom {
        var phoneNumbers: [LabeledValue] = []
        var messagingNumbers: [LabeledValue] = []
        var emailAddresses: [LabeledValue] = []
        var otherContactInfo: [LabeledValue] = []
    }

    static func telecom(_ points: [FHIRPathElementNode]) -> Telecom {
        var result = Telecom()
        for point in points {
            guard let value = point.element.childValue("value") else { continue }
            let label = point.element.childValue("use") ?? "other"
            switch point.element.childValue("system") {
            case "phone":
                result.phoneNumbers.append(LabeledValue(label: label, value: value))
                if label == "mobile" { result.messagingNumbers.append(LabeledValue(label: label, value: value)) }
            case "sms":
                result.messagingNumbers.append(LabeledValue(label: label, value: value))
            case "email":
                result.emailAddresses.append(LabeledValue(label: label, value: value))
            case let system?:
                result.otherContactInfo.append(LabeledValue(label: "\(system) (\(label))", value: value))
            case nil:
                result.otherContactInfo.append(LabeledValue(label: label, value: value))
            }
        }
        return result
    }

    /// The text of a CodeableConcept (or a Coding): its text, else the first display, else the first code.
    static func conceptText(_ concept: Element) -> String? {
        if let text = concept.childValue("text") { return text }
        if let display = concept.childValue("display") { return display }
        let codings = concept.children(named: "coding")
        if let display = codings.lazy.compactMap({ $0.childValue("display") }).first { return display }
        return codings.lazy.compactMap({ $0.childValue("code") }).first ?? concept.childValue("code") ?? concept.value
    }

    private static func joined(_ parts: [String]) -> String? {
        parts.isEmpty ? nil : parts.joined(separator: " ")
    }
}
