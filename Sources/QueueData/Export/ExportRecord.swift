/// One object as an export writes it: a value per field of the export, in the fields' order.
public struct ExportRecord: Sendable, Hashable {
    /// The object's ID.
    public let objectID: ObjectID
    /// One value per ``ExportField`` of the export, in order.
    public let values: [ExportValue]

    /// Creates a record.
    public init(objectID: ObjectID, values: [ExportValue]) {
        self.objectID = objectID
        self.values = values
    }
}
