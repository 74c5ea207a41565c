import Foundation

/// BALP's required elements, checked on an AuditEvent's JSON (`caregate validate` checks R4 core only):
/// those of the base patterns (Query, Read, Create, Update, Delete) and of their Patient profiles.
public enum BALPRequirements {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static func profile(_ event: [String: Any]) -> String? {
        ((event["meta"] as? [String: Any])?["profile"] as? [String])?.first
    }

    public static func subtype(_ event: [String: Any]) -> String? {
        (event["subtype"] as? [[String: Any]])?.first?["code"] as? String
    }

    public static func require(_ condition: Bool, _ what: String, _ event: [String: Any]) throws {
        guard condition else { throw Missing(description: "\(what) in \(event["id"] ?? "?")") }
    }

    /// Fails with what is missing.
    public static func check(_ event: [String: Any]) throws {
        let type = event["type"] as? [String: Any]
        try require(type?["system"] as? String == "http://terminology.hl7.org/CodeSystem/audit-event-type" && type?["code"] as? String == "rest", "type rest", event)
        let subtypes = event["subtype"] as? [[String: Any]] ?? []
        try require(subtypes.count == 1 && subtypes[0]["system"] as? String == "http://hl7.org/fhir/restful-interaction", "one restful-interaction subtype", event)
        let expectedAction = ["search-type": "E", "read": "R", "create": "C", "update": "U", "delete": "D"][subtype(event) ?? ""]
        try require(expectedAction != nil && event["action"] as? String == expectedAction, "the action of the subtype", event)
        try require(event["recorded"] is String, "recorded", event)
        try require(["0", "4", "8", "12"].contains(event["outcome"] as? String ?? ""), "outcome", event)
        // BALP fixes outcome 0: only a successful event may claim its profile.
        try require(profile(event) == nil || event["outcome"] as? String == "0", "a BALP profile claimed by a failure", event)
        let agents = event["agent"] as? [[String: Any]] ?? []
        let agentCode: ([String: Any]) -> String? = { (($0["type"] as? [String: Any])?["coding"] as? [[String: Any]])?.first?["code"] as? String }
        try require(agents.filter { agentCode($0) == "110153" }.count == 1, "one client agent (DCM 110153)", event)
        try require(agents.filter { agentCode($0) == "110152" }.count == 1, "one server agent (DCM 110152)", event)
        for agent in agents { try require(agent["requestor"] is Bool, "agent.requestor", event) }
        // agent[client].who and agent[server].who 1..1; agent[server].network 1..1. (agent[client].network,
        // 1..1 in BALP, is there when the trail has the client's address: an IP, type 2; entries older than
        // the column and the command line's have none. Docs/audit-events.md says so.)
        for code in ["110153", "110152"] {
            try require(agents.first { agentCode($0) == code }?["who"] is [String: Any], "agent \(code).who", event)
        }
        if let clientNetwork = agents.first(where: { agentCode($0) == "110153" })?["network"] as? [String: Any] {
            try require(clientNetwork["address"] is String && clientNetwork["type"] as? String == "2", "agent[client].network an IP (type 2)", event)
        }
        let serverNetwork = agents.first { agentCode($0) == "110152" }?["network"] as? [String: Any]
        try require(serverNetwork?["address"] is String, "agent[server].network", event)
        let users = agents.filter { $0["requestor"] as? Bool == true }
        try require(users.count == 1, "one user agent (requestor true)", event)
        let userType = ((users.first?["type"] as? [String: Any])?["coding"] as? [[String: Any]])?.first
        let expectedUserType = ["search-type": "IRCP", "read": "IRCP", "create": "AUT", "update": "AUT", "delete": "CST"][subtype(event) ?? ""]
        try require(
            userType?["system"] as? String == "http://terminology.hl7.org/CodeSystem/v3-ParticipationType" && userType?["code"] as? String == expectedUserType,
            "the user agent's type (IRCP for a read or query, AUT for a create or update)", event)
        let userWho = users.first?["who"] as? [String: Any]
        try require((userWho?["identifier"] as? [String: Any])?["value"] is String && userWho?["display"] == nil, "the user as an identifier, no name", event)
        try require(((event["source"] as? [String: Any])?["observer"] as? [String: Any]) != nil, "source.observer", event)

        let entities = event["entity"] as? [[String: Any]] ?? []
        let slice: ([String: Any]) -> (String?, String?) = {
            (($0["type"] as? [String: Any])?["code"] as? String, ($0["role"] as? [String: Any])?["code"] as? String)
        }
        let patients = entities.filter { slice($0) == ("1", "1") }
        try require(patients.count == 1, "one patient entity (type 1, role 1)", event)
        try require((((patients.first?["what"] as? [String: Any])?["reference"]) as? String)?.hasPrefix("Patient/") == true, "patient entity what Patient/", event)
        if subtype(event) == "search-type" {
            let queries = entities.filter { slice($0) == ("2", "24") }
            try require(queries.count == 1 && queries.first?["what"] == nil, "one query entity (type 2, role 24) without what", event)
            let query = queries.first?["query"] as? String ?? ""
            try require(Data(base64Encoded: query) != nil && !query.isEmpty, "query entity's query in base64", event)
        } else {
            let data = entities.filter { slice($0) == ("2", "4") }
            try require(data.count == 1 && data.first?["what"] is [String: Any], "one data entity (type 2, role 4) with what", event)
        }
    }
}
