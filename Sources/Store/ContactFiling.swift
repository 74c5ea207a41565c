import CareModel

extension Sequence<Contact> {
    /// The contacts filed under patient `patientID`, as its revision log files them: those of its care plans
    /// (`carePlanIDs`), and those of no care plan whose linkage names the patient (a RelatedPerson's), in this
    /// sequence's order. Ids are compared as the store compares them (``ByteExactID``): an equivalent id is
    /// another patient's. What an app is shown and what `caregate patients contacts` lists.
    public func filed(underPatient patientID: String, carePlanIDs: some Sequence<String>) -> [Contact] {
        let plans = Set(carePlanIDs.map(ByteExactID.init))
        return filter { contact in
            contact.carePlanID.map { plans.contains(ByteExactID($0)) } ?? ByteExactID.same(contact.metadata.linkage.patientID, patientID)
        }
    }
}
