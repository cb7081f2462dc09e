import Foundation

/// Hears what changed in a ``FetchedResultsController``, with Core Data's callbacks, on the
/// controller's context's queue. Every method has a default that does nothing.
///
/// For each batch of changes the controller calls ``controllerWillChangeContent(_:)``, then
/// `controller(_:didChange:atSectionIndex:for:)` for each section inserted or deleted and
/// `controller(_:didChange:at:for:newIndexPath:)` for each object inserted, deleted, moved or
/// updated (in the order of ``FetchedResultsDifference``), then ``controllerDidChangeContent(_:)``
/// and ``controller(_:didChangeContentWith:)`` with the whole difference. Index paths follow
/// `UITableView` batch updates: old index paths for deletes (and the source of moves), new ones
/// for inserts (and the destination of moves).
public protocol FetchedResultsControllerDelegate<Object>: AnyObject {
    /// The objects of the controllers this delegate listens to.
    associatedtype Object: ManagedObject

    /// Called before the controller reports a batch of changes.
    func controllerWillChangeContent(_ controller: FetchedResultsController<Object>)

    /// Called for each section inserted (at its new index) or deleted (at its old index).
    func controller(
        _ controller: FetchedResultsController<Object>,
        didChange section: FetchedResultsSection<Object>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType)

    /// Called for each object inserted, deleted, moved or updated.
    ///
    /// - Parameters:
    ///   - controller: The controller.
    ///   - object: The object. For an object another context deleted that the controller never
    ///     materialized (with a `fetchBatchSize`), it has left its context and holds no values.
    ///   - indexPath: Where it was (`nil` for an insert).
    ///   - type: What happened.
    ///   - newIndexPath: Where it is (`nil` for a delete).
    func controller(
        _ controller: FetchedResultsController<Object>,
        didChange object: Object,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?)

    /// Called after the controller reported a batch of changes.
    func controllerDidChangeContent(_ controller: FetchedResultsController<Object>)

    /// Called after ``controllerDidChangeContent(_:)`` with the batch as one `Sendable` value:
    /// the snapshots before and after, and the changes between them.
    func controller(
        _ controller: FetchedResultsController<Object>,
        didChangeContentWith difference: FetchedResultsDifference)
}

extension FetchedResultsControllerDelegate {
    /// Does nothing.
    public func controllerWillChangeContent(_ controller: FetchedResultsController<Object>) {}

    /// Does nothing.
    public func controller(
        _ controller: FetchedResultsController<Object>,
        didChange section: FetchedResultsSection<Object>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {}

    /// Does nothing.
    public func controller(
        _ controller: FetchedResultsController<Object>,
        didChange object: Object,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?
    ) {}

    /// Does nothing.
    public func controllerDidChangeContent(_ controller: FetchedResultsController<Object>) {}

    /// Does nothing.
    public func controller(
        _ controller: FetchedResultsController<Object>,
        didChangeContentWith difference: FetchedResultsDifference
    ) {}
}

/// One section of a ``FetchedResultsController``: objects sharing a section name.
///
/// Read it on the controller's context's queue. Its objects are materialized when read.
public struct FetchedResultsSection<Object: ManagedObject> {
    /// The section's name: the value of the controller's section key path (`""` without one,
    /// and for `nil`).
    public let name: String
    /// The section's index title: ``FetchedResultsController/sectionIndexTitle(forSectionName:)``.
    public let indexTitle: String?
    /// How many objects the section holds.
    public let numberOfObjects: Int

    let controller: FetchedResultsController<Object>
    let index: Int

    /// The section's objects, in order (materialized, and registered in the context, when read).
    ///
    /// - Important: Call on the context's queue.
    public var objects: [Object] {
        controller.objects(inSection: name)
    }
}

@available(*, unavailable, message: "A section reaches its controller's objects: use it on the context's queue")
extension FetchedResultsSection: Sendable {}
