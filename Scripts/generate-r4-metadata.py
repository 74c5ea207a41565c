#!/usr/bin/env python3
"""Generate Sources/FHIRCore/Metadata/R4MetadataData.swift from the FHIR R4 (4.0.1) core package.

Usage (from the project root):

    python3 Scripts/generate-r4-metadata.py [DEFINITIONS_FOLDER] [--output FILE] [--check]

DEFINITIONS_FOLDER defaults to ../shared/corpus/fhir-r4-definitions (one JSON file per resource of the
hl7.fhir.r4.core package). Standard library only. The output is deterministic: re-running on the same
package gives the same file. --output names the file to write (default: the committed
Sources/FHIRCore/Metadata/R4MetadataData.swift); --check writes nothing and exits 1 when that file
differs from what the definitions generate (a hand edit or a stale file), so CI can refuse it.

What is kept: every StructureDefinition that defines a type (derivation `specialization`, or the roots
Element and Resource) of kind primitive-type, complex-type or resource. Profiles (derivation
`constraint`), extension definitions and logical models are skipped. For each snapshot element: name,
normalized types, cardinality, modifier/summary flags, XML representation, the context of its children
(inline backbone elements and contentReference), and its required binding when the value set can be
expanded from the package alone (whole CodeSystems of the package, nested concepts included, or listed
concepts; anything needing a filter or an external code system leaves the binding out). Each value set
is written once and referenced by index.

The data format (decoded by R4MetadataDecoder.swift), one record per line, fields separated by TAB:

    V <url> <codes separated by SPACE-SLASH-SPACE ' / '>        value set, numbered from 0 in order
    T <name> <kind p|c|r> <abstract 0|1> <baseType or empty>    a type; opens the context <name>
    C <context path>                                            opens a backbone context (Type.a.b)
    E <name> <types ,> <min> <max or *> <flags> <valueSet index or empty> <childContext or empty>
                                                                an element of the last opened context
    I <definition path> <key> <severity e|w> <human> <expression> <B when a best-practice rule, else empty>
                                                                an invariant (ElementDefinition.constraint)

Invariants are written where they are defined: only the constraints a type defines itself (no `source`,
or the type's own url), so `ele-1` appears once on Element and `dom-3` once on DomainResource; the
validator applies a type's invariants together with those of its base types. Tabs and line breaks in
the human text or the expression become spaces.

`name` keeps the `[x]` of choice elements. flags: M modifier, S summary, A XML attribute, X xhtml.
"""

import argparse
import json
import os
import sys

FHIR_TYPE_EXT = "http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type"
BEST_PRACTICE_EXT = "http://hl7.org/fhir/StructureDefinition/elementdefinition-bestpractice"
CODE_SEPARATOR = " / "


def load_package(folder):
    """Index the package's StructureDefinitions, ValueSets and CodeSystems by url."""
    structures, value_sets, code_systems = [], {}, {}
    for file_name in sorted(os.listdir(folder)):
        if not file_name.endswith(".json"):
            continue
        prefix = file_name.split("-", 1)[0]
        if prefix not in ("StructureDefinition", "ValueSet", "CodeSystem"):
            continue
        with open(os.path.join(folder, file_name), encoding="utf-8") as handle:
            resource = json.load(handle)
        kind = resource.get("resourceType")
        if kind == "StructureDefinition":
            structures.append(resource)
        elif kind == "ValueSet":
            value_sets[resource["url"]] = resource
        elif kind == "CodeSystem":
            code_systems[resource["url"]] = resource
    return structures, value_sets, code_systems


def is_type_definition(sd):
    if sd.get("kind") not in ("primitive-type", "complex-type", "resource"):
        return False
    if sd.get("derivation") == "specialization":
        return True
    return sd.get("derivation") is None and "baseDefinition" not in sd


class ValueSetExpander:
    """Expands value sets from the package alone; `None` when that is not possible."""

    def __init__(self, value_sets, code_systems):
        self.value_sets = value_sets
        self.code_systems = code_systems
        self.cache = {}

    def expand(self, url, depth=0):
        url = url.split("|", 1)[0]
        if url in self.cache:
            return self.cache[url]
        if depth > 10:
            return None
        result = self._expand(url, depth)
        self.cache[url] = result
        return result

    def _code_system_codes(self, system):
        cs = self.code_systems.get(system)
        if cs is None or cs.get("content") != "complete":
            return None
        codes = []

        def walk(concepts):
            for concept in concepts:
                codes.append(concept["code"])
                walk(concept.get("concept", []))

        walk(cs.get("concept", []))
        return codes

    def _include_codes(self, include, depth):
        if include.get("filter"):
            return None
        codes = None
        if "system" in include:
            if include.get("concept"):
                codes = [c["code"] for c in include["concept"]]
            else:
                codes = self._code_system_codes(include["system"])
                if codes is None:
                    return None
        for nested in include.get("valueSet", []):
            nested_codes = self.expand(nested, depth + 1)
            if nested_codes is None:
                return None
            codes = nested_codes if codes is None else [c for c in codes if c in set(nested_codes)]
        return codes

    def _expand(self, url, depth):
        vs = self.value_sets.get(url)
        if vs is None or "compose" not in vs:
            return None
        compose = vs["compose"]
        codes = []
        for include in compose.get("include", []):
            include_codes = self._include_codes(include, depth)
            if include_codes is None:
                return None
            codes.extend(c for c in include_codes if c not in codes)
        for exclude in compose.get("exclude", []):
            exclude_codes = self._include_codes(exclude, depth)
            if exclude_codes is None:
                return None
            codes = [c for c in codes if c not in set(exclude_codes)]
        return codes if codes else None


def normalized_types(element, sd_kind, path):
    """The element's type codes as FHIR type names."""
    result = []
    for type_ref in element.get("type", []):
        code = type_ref["code"]
        if code.startswith("http://hl7.org/fhirpath/System."):
            fhir_type = None
            for ext in type_ref.get("extension", []):
                if ext.get("url") == FHIR_TYPE_EXT:
                    fhir_type = ext.get("valueUrl") or ext.get("valueUri")
            code = fhir_type or code.rsplit(".", 1)[1].lower()
        if code not in result:
            result.append(code)
    # The id of a resource is of type `id` (R4 writes it as System.String like Element.id).
    if sd_kind == "resource" and path.count(".") == 1 and path.endswith(".id"):
        result = ["id"]
    return result


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description="Generate the compact R4 metadata Swift file.")
    parser.add_argument("definitions", nargs="?",
                        default=os.path.join(root, "..", "shared", "corpus", "fhir-r4-definitions"),
                        help="the folder of the hl7.fhir.r4.core package (one JSON file per resource)")
    parser.add_argument("--output", default=os.path.join(root, "Sources", "FHIRCore", "Metadata", "R4MetadataData.swift"),
                        help="the Swift file to write (default: the committed one)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the output file differs from what would be generated")
    arguments = parser.parse_args()
    folder, output = arguments.definitions, arguments.output
    if not os.path.isdir(folder):
        sys.exit(f"no definitions folder at {folder}")

    structures, value_sets, code_systems = load_package(folder)
    expander = ValueSetExpander(value_sets, code_systems)
    type_defs = sorted((sd for sd in structures if is_type_definition(sd)), key=lambda sd: sd["id"])

    vs_index, vs_lines = {}, []
    type_lines = []
    invariant_lines = []
    kind_letter = {"primitive-type": "p", "complex-type": "c", "resource": "r"}

    for sd in type_defs:
        name = sd["type"]
        base = sd.get("baseDefinition", "").rsplit("/", 1)[-1] if "baseDefinition" in sd else ""
        type_lines.append("\t".join(["T", name, kind_letter[sd["kind"]], "1" if sd.get("abstract") else "0", base]))
        elements = sd["snapshot"]["element"]
        by_path = {e["path"]: e for e in elements}
        parents_with_children = {e["path"].rsplit(".", 1)[0] for e in elements if "." in e["path"]}
        current_context = name
        for element in elements:
            for constraint in element.get("constraint", []):
                if constraint.get("source") not in (None, sd["url"]) or "expression" not in constraint:
                    continue
                flat = lambda text: " ".join(text.split())
                invariant_lines.append("\t".join([
                    "I", element["path"], constraint["key"], "e" if constraint["severity"] == "error" else "w",
                    flat(constraint.get("human", "")), flat(constraint["expression"]),
                    "B" if any(ext.get("url") == BEST_PRACTICE_EXT and ext.get("valueBoolean")
                               for ext in constraint.get("extension", [])) else "",
                ]))
        for element in elements[1:]:
            path = element["path"]
            context, element_name = path.rsplit(".", 1)
            # A primitive's value is the element's own value, not a child.
            if sd["kind"] == "primitive-type" and element_name == "value":
                continue
            if context != current_context:
                type_lines.append("C\t" + context)
                current_context = context
            types = normalized_types(element, sd["kind"], path)
            child_context = ""
            if "contentReference" in element:
                child_context = element["contentReference"].lstrip("#").split("#")[-1]
                target = by_path.get(child_context)
                if target is None:
                    sys.exit(f"unresolved contentReference {element['contentReference']} at {path}")
                types = normalized_types(target, sd["kind"], child_context)
            elif path in parents_with_children:
                child_context = path
            if not types:
                sys.exit(f"no type for {path}")
            flags = ""
            if element.get("isModifier"):
                flags += "M"
            if element.get("isSummary"):
                flags += "S"
            representation = element.get("representation", [])
            if "xmlAttr" in representation:
                flags += "A"
            # R4 marks only xhtml.value as `xhtml`; an element of type xhtml (Narrative.div) is one too.
            if "xhtml" in representation or types == ["xhtml"]:
                flags += "X"
            binding_ref = ""
            binding = element.get("binding", {})
            if binding.get("strength") == "required" and binding.get("valueSet"):
                url = binding["valueSet"].split("|", 1)[0]
                if url not in vs_index:
                    codes = expander.expand(url)
                    if codes is not None:
                        for code in codes:
                            if CODE_SEPARATOR in code or "\t" in code or "\n" in code:
                                sys.exit(f"code {code!r} of {url} clashes with the data format")
                        vs_index[url] = len(vs_lines)
                        vs_lines.append("\t".join(["V", url, CODE_SEPARATOR.join(codes)]))
                    else:
                        vs_index[url] = None
                if vs_index[url] is not None:
                    binding_ref = str(vs_index[url])
            type_lines.append("\t".join([
                "E", element_name, ",".join(types), str(element.get("min", 0)), element.get("max", "*"),
                flags, binding_ref, child_context,
            ]))

    data = "\n".join(vs_lines + type_lines + invariant_lines)
    if '"""#' in data:
        sys.exit("data contains the raw string delimiter")
    resource_count = sum(1 for sd in type_defs if sd["kind"] == "resource" and not sd.get("abstract"))
    header = f"""// GENERATED FILE — DO NOT EDIT.
// Generated by Scripts/generate-r4-metadata.py from the FHIR R4 4.0.1 core package (hl7.fhir.r4.core).
// Regenerate from the project root with:
//     python3 Scripts/generate-r4-metadata.py ../shared/corpus/fhir-r4-definitions
// {len(type_defs)} types ({resource_count} concrete resources), {len(vs_lines)} expanded required value sets,
// {len(invariant_lines)} invariants.
// The format is described in the generator and decoded by R4MetadataDecoder.swift.

extension FHIRMetadata {{
    /// The compact R4 metadata text, one record per line.
    static let r4Data: String = #\"\"\"
{data}
\"\"\"#
}}
"""
    if arguments.check:
        try:
            with open(output, encoding="utf-8") as handle:
                committed = handle.read()
        except OSError as error:
            sys.exit(f"cannot read {output}: {error}")
        if committed != header:
            sys.exit(f"{output} differs from what {folder} generates: regenerate it with "
                     f"python3 Scripts/generate-r4-metadata.py (never edit it by hand)")
        print(f"{output} is up to date ({len(type_defs)} types, {len(invariant_lines)} invariants)")
        return
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(header)
    print(f"wrote {output}: {len(type_defs)} types, {resource_count} concrete resources, "
          f"{len(vs_lines)} value sets, {len(data)} characters")


if __name__ == "__main__":
    main()
