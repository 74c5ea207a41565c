import FHIRCore
import FHIRPath
/// How strict structural validation is, and what it may assume about the source.
///
/// The default is **strict**: an element the R4 definitions do not know is an error, because a gateway
/// that silently carries unknown content forward would hide an EHR's mistakes. Lenient mode reports the
/// same elements as warnings. The switch behaves the same for JSON and XML input.
public struct ValidationOptions: Sendable {
    /// Unknown elements are errors (`true`, the default) or warnings (`false`).
    public var strict: Bool
    /// The source was JSON, so the token kind of each primitive (string, number, boolean) is checked
    /// against its type. XML has only text and leaves this off.
    public var checkJSONValueKinds: Bool
    /// The tree was read by the JSON reader, so each element's `Element/jsonArrayItem` says whether it
    /// was written in a JSON array: an element that repeats (max > 1) must be, and one that does not
    /// (max 1) must not be. Off by default, since XML input and trees built in code carry no such mark;
    /// ``DocumentValidator`` turns it on for JSON and NDJSON files.
    public var checkJSONArrayShape: Bool
    /// Whether markdown may contain embedded HTML tags (`true` by default, as R4 permits it).
    public var allowHTMLInMarkdown: Bool
    /// Whether contained resources are validated (`true` by default).
    public var validateContained: Bool
    /// Whether the R4 invariants (FHIRPath constraints of the definitions) are evaluated (`true` by
    /// default); see ``InvariantCatalog`` for those skipped.
    public var checkInvariants: Bool

    public init(
        strict: Bool = true, checkJSONValueKinds: Bool = true, checkJSONArrayShape: Bool = false,
        allowHTMLInMarkdown: Bool = true, validateContained: Bool = true, checkInvariants: Bool = true
    ) {
        self.checkInvariants = checkInvariants
        self.strict = strict
        self.checkJSONValueKinds = checkJSONValueKinds
        self.checkJSONArrayShape = checkJSONArrayShape
        self.allowHTMLInMarkdown = allowHTMLInMarkdown
        self.validateContained = validateContained
    }
}
