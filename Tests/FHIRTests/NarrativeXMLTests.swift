import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// A narrative `div` read from JSON is embedded in XML as it is, so JSON -> XML must refuse one that is
/// not a single well-formed XHTML element (``XHTMLChecker/xmlProblem(in:)``) rather than write XML that
/// does not parse; and every div it accepts must give XML that reads back.
final class NarrativeXMLTests: XCTestCase {
    /// A Patient whose narrative div is `div`, as a JSON string literal.
    private func patientJSON(div: String) -> String {
        var literal = ""
        for scalar in div.unicodeScalars {
            switch scalar {
            case "\"": literal += "\\\""
            case "\\": literal += "\\\\"
            case "\n": literal += "\\n"
            case "\t": literal += "\\t"
            case _ where scalar.value < 0x20: literal += String(format: "\\u%04X", scalar.value)
            default: literal.unicodeScalars.append(scalar)
            }
        }
        return #"{"resourceType":"Patient","id":"p","text":{"status":"generated","div":""# + literal + "\"}}"
    }

    private static let notXML: [(div: String, reason: String)] = [
        (#"<div xmlns="http://www.w3.org/1999/xhtml">a&nbsp;b</div>"#, "undefined entity '&nbsp;'"),
        ("<div><p>x</div>", "does not match <p>"),
        ("<div><b>x</i></div>", "does not match <b>"),
        ("<div>x", "ends before <div> is closed"),
        ("<div><p>x</p>", "ends before <div> is closed"),
        ("<div>x</div></div>", "content follows its end tag"),
        ("<div>x</div><div>y</div>", "content follows its end tag"),
        ("<div><br></div>", "does not match <br>"),
        ("<div>a & b</div>", "bare '&'"),
        ("<div>a < b</div>", "bare '<'"),
        ("<div><p class=x>y</p></div>", "must be in quotes"),
        ("<div><td nowrap>y</td></div>", "has no value"),
        (#"<div><p a="1" a="2">y</p></div>"#, "appears twice"),
        (#"<div><p title="a<b">y</p></div>"#, "must be written &lt;"),
        ("<div><x:p>y</x:p></div>", "prefix 'x'"),
        (#"<div><p x:a="1">y</p></div>"#, "prefix 'x'"),
        ("<div>bell \u{07}</div>", "control character U+0007"),
        ("<div>\u{FFFE}</div>", "U+FFFE"),
        ("<div>&#0;</div>", "not a reference to an XML character"),
        ("<div>&#xD800;</div>", "not a reference to an XML character"),
        ("<div>&#X41;</div>", "not a reference to an XML character"),
        ("<div><!-- a -- b --></div>", "'--'"),
        ("<div><!-- open</div>", "unterminated comment"),
        ("<div><![CDATA[x</div>", "unterminated CDATA"),
        ("<div><!DOCTYPE html>x</div>", "DOCTYPE"),
        (#"<div><?xml version="1.0"?>x</div>"#, "processing instruction"),
        ("<div>]]></div>", "']]>'"),
        (#"<div xmlns="http://www.w3.org/1999/html">x</div>"#, "single xhtml <div>"),
        (#"<div xmlns="">x</div>"#, "single xhtml <div>"),
        ("<p>x</p>", "single xhtml <div>"),
        ("<divx>x</divx>", "single xhtml <div>"),
        ("plain text", "single xhtml <div>"),
        ("", "single xhtml <div>"),
        (#"<x:div xmlns:x="http://hl7.org/fhir">x</x:div>"#, "single xhtml <div>"),
    ]

    private static let wellFormed: [String] = [
        #"<div xmlns="http://www.w3.org/1999/xhtml"><p>a &amp; b &lt; c &gt; &quot;&apos; &#160;&#xA0;</p></div>"#,
        #"<div><br/><img src="x.png" alt='say "hi"'/></div>"#,
        " \n <div>leading whitespace</div>\n",
        #"<div xmlns = 'http://www.w3.org/1999/xhtml' class="a>b">spaced namespace</div>"#,
        #"<div title="xmlns=">namespace-like text in a value</div>"#,
        "<div><!-- a note --><![CDATA[ <raw> & ]]>text</div>",
        #"<div xmlns:svg="http://www.w3.org/2000/svg"><svg:svg><svg:circle r="1"/></svg:svg> drawn</div>"#,
        #"<xhtml:div xmlns:xhtml="http://www.w3.org/1999/xhtml">prefixed</xhtml:div>"#,
        #"<div xml:lang="en" lang="en">tagged</div>"#,
        "<div>\tunicode é 😀 \u{10FFFD}</div>",
        "<div/>",
        #"<div><p title="a &amp; b" >x</p ><table><tr><td>1</td></tr></table></div>"#,
    ]

    func testDivsThatAreNotXMLAreRefusedWithTheirLocation() throws {
        for (div, reason) in Self.notXML {
            let problem = XHTMLChecker.xmlProblem(in: div)
            XCTAssertTrue(problem?.contains(reason) == true, "\(div.debugDescription): \(problem ?? "accepted")")
            XCTAssertThrowsError(try FHIRFormat.convert(Data(patientJSON(div: div).utf8), to: .xml, pretty: false), div.debugDescription) { error in
                let refusal = error as? FHIRFormat.NarrativeNotWellFormedError
                XCTAssertEqual(refusal?.location, "Patient.text.div", div.debugDescription)
                XCTAssertEqual(refusal?.reason, problem)
                XCTAssertTrue("\(error)".hasPrefix("Patient.text.div: the narrative is not well-formed XHTML"), "\(error)")
            }
            // JSON to JSON does not need XML, and keeps the text as it was.
            let json = try FHIRFormat.convert(Data(patientJSON(div: div).utf8), to: .json, pretty: false)
            XCTAssertEqual(try FHIRJSON.read(json.data).child(named: "text")?.childValue("div"), div)
        }
        print("narratives refused for XML: \(Self.notXML.count)/\(Self.notXML.count)")
    }

    func testWellFormedDivsConvertAndReadBack() throws {
        for div in Self.wellFormed {
            XCTAssertNil(XHTMLChecker.xmlProblem(in: div), div.debugDescription)
            let conversion = try FHIRFormat.convert(Data(patientJSON(div: div).utf8), to: .xml, pretty: true)
            do {
                let back = try FHIRXML.read(conversion.data)
                let text = try XCTUnwrap(back.child(named: "text")?.childValue("div"))
                XCTAssertTrue(text.contains("http://www.w3.org/1999/xhtml"), text)
            } catch {
                XCTFail("\(div.debugDescription) gave XML that does not read back: \(error)\n\(String(decoding: conversion.data, as: UTF8.self))")
            }
        }
        print("narratives converted to XML and read back: \(Self.wellFormed.count)")
    }

    func testLocationsInsideBundlesContainedResourcesAndNDJSON() throws {
        let bad = #""text":{"status":"generated","div":"<div>a&nbsp;b</div>"}"#
        let good = #""text":{"status":"generated","div":"<div>ok</div>"}"#
        let bundle = #"{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient",\#(good)}},{"resource":{"resourceType":"Patient","contained":[{"resourceType":"Basic","code":{"text":"c"},\#(good)},{"resourceType":"Basic","code":{"text":"c"},\#(bad)}]}}]}"#
        XCTAssertThrowsError(try FHIRFormat.convert(Data(bundle.utf8), to: nil, pretty: false)) { error in
            XCTAssertEqual((error as? FHIRFormat.NarrativeNotWellFormedError)?.location, "Bundle.entry[1].resource.contained[1].text.div")
        }
        let ndjson = "{\"resourceType\":\"Patient\",\(good)}\n\n{\"resourceType\":\"Patient\",\(bad)}\n"
        XCTAssertThrowsError(try FHIRFormat.convert(Data(ndjson.utf8), to: .xml, pretty: false)) { error in
            let refusal = error as? FHIRFormat.NarrativeNotWellFormedError
            XCTAssertEqual(refusal?.location, "Patient.text.div")
            XCTAssertEqual(refusal?.line, 3)
        }
        XCTAssertNoThrow(try FHIRFormat.convert(Data(ndjson.utf8), to: .json, pretty: false))
    }

    func testValidationReportsTheSameProblems() throws {
        let patient = try FHIRJSON.read(Data(patientJSON(div: "<div><p>unbalanced</div>").utf8))
        let issues = StructureValidator().validate(patient).issues
        XCTAssertEqual(issues.map(\.expression), ["Patient.text.div"])
        XCTAssertTrue(issues[0].diagnostics.contains("does not match <p>"), issues[0].diagnostics)
        // The FHIR rules still apply to well-formed XHTML.
        let script = try FHIRJSON.read(Data(patientJSON(div: #"<div><script>x()</script><p onclick="y()">z</p></div>"#).utf8))
        XCTAssertEqual(StructureValidator().validate(script).issues.count, 2)
        let empty = XHTMLChecker.problems(in: "<div> <!-- nothing --> </div>")
        XCTAssertEqual(empty, ["the narrative SHALL have some non-whitespace content (txt-2)"])
    }

    /// Every div made of up to two of XML's tricky pieces, closed or not: whatever the checker accepts
    /// must give XML that reads back, and whatever it refuses must fail as XML too (the checker is neither
    /// too loose nor too strict).
    func testPiecewiseDivsAgreeWithTheXMLReader() throws {
        let pieces = [
            "<p>", "</p>", "<b>", "</b>", "<br/>", "x", " ", "&amp;", "&nbsp;", "&", "<", ">", "&#65;", "&#0;",
            "<!-- c -->", "<!--", "-->", "--", "<![CDATA[ < & ]]>", "]]>", "<?pi d?>", "<p a=\"1\">", "<p a=1>",
            "<p a=\"<\">", "<p a='\"' b=\"'\">", "<a:p xmlns:a=\"urn:a\">", "</a:p>", "<a:p>", "\"", "=", "é", "/", "\t",
        ]
        var divs: [String] = []
        for first in pieces {
            for second in [""] + pieces {
                divs.append("<div>" + first + second + "</div>")
                divs.append("<div>" + first + second)
            }
        }
        var accepted = 0, refused = 0
        for div in divs {
            let json = Data(patientJSON(div: div).utf8)
            let problem = XHTMLChecker.xmlProblem(in: div)
            // What the XML writer would produce, refusal or not.
            let xml = FHIRXML.write(try FHIRJSON.read(json))
            let readsBack = (try? FHIRXML.read(xml)) != nil
            if problem == nil {
                accepted += 1
                XCTAssertTrue(readsBack, "accepted but the XML does not read back: \(div.debugDescription)")
                XCTAssertNoThrow(try FHIRFormat.convert(json, to: .xml, pretty: false))
            } else {
                refused += 1
                XCTAssertFalse(readsBack, "refused (\(problem ?? "")) but the XML reads back: \(div.debugDescription)")
            }
        }
        print("piecewise narratives: \(accepted) accepted, \(refused) refused, all agreeing with the XML reader")
    }

    /// Every narrative in the JSON corpus is well-formed XHTML: conversion to XML refuses none, and the
    /// XML it writes reads back.
    func testCorpusNarrativesAllConvert() throws {
        var files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json")
        files += try Corpus.files(in: "synthea-r4", suffix: ".json")
        files += try Corpus.files(in: "bulk-ndjson", suffix: ".000.ndjson")  // not log.ndjson, which is no FHIR
        var converted = 0
        for file in files {
            do {
                let conversion = try FHIRFormat.convert(Data(contentsOf: file), to: .xml, pretty: false)
                _ = try FHIRXML.read(conversion.data)
                converted += 1
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
        print("json corpus to xml: \(converted)/\(files.count) files")
        XCTAssertEqual(converted, files.count)
    }
}

