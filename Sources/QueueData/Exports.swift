// Like `import CoreData`, `import QueueData` brings in Foundation (and with it Dispatch):
// models use `Date`, `URL` and `Decimal`, fetches use `#Predicate` and `SortDescriptor`, and
// contexts live on `DispatchQueue`s.
@_exported import Foundation
