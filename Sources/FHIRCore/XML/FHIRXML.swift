import Foundation

/// The FHIR R4 XML format: reads XML bytes into the generic ``Element`` model and writes an element tree
/// back as XML, following the FHIR XML rules (namespace `http://hl7.org/fhir`, `value` attributes,
/// `id`/`url` attributes, the XHTML narrative `div`, resources wrapped in their holding element).
///
/// ### Members
/// - ``read(_:)``: bytes to a root resource element; throws ``FHIRSyntaxError`` with line and column.
/// - ``write(_:pretty:)``: a resource element to bytes, children in definition order.
///
/// ```swift
/// let patient = try FHIRXML.read(data)          // Element.resource("Patient")
/// let xml = FHIRXML.write(patient, pretty: true)
/// ```
///
/// The reader sits on libxml2 with network access, DTD loading and entity substitution all off, and
/// rejects any DOCTYPE or entity declaration outright: FHIR XML never carries one, so an XXE payload or
/// a billion-laughs document fails before anything is expanded. It needs no metadata. The writer uses
/// ``FHIRMetadata/r4`` for element order and XML representation, and falls back to document order and
/// the FHIR naming rules for elements the metadata does not know.
public enum FHIRXML {
    /// The FHIR namespace every FHIR element is in.
    public static let fhirNamespace = "http://hl7.org/fhir"
    /// The XHTML namespace of the narrative `div`.
    public static let xhtmlNamespace = "http://www.w3.org/1999/xhtml"

    /// Reads one FHIR resource from XML bytes. The root element becomes ``Element/resource(_:children:)``.
    ///
    /// - Throws: ``FHIRSyntaxError`` (format `.xml`) for a document that is not well-formed, that has a
    ///   DOCTYPE or entity declaration, elements outside the FHIR namespace, text where FHIR allows none,
    ///   nesting deeper than 128 elements, or a narrative larger than 10 MB.
    public static func read(_ data: Data) throws -> Element {
        try XMLReader.parse(data)
    }

    /// Writes a resource element as FHIR XML (UTF-8, with an XML declaration), compact or indented.
    public static func write(_ element: Element, pretty: Bool = false) -> Data {
        var writer = XMLWriter(pretty: pretty)
        writer.writeDocument(element)
        return Data(writer.output)
    }
}
