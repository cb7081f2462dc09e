/// The hashed part of a ``ColumnIndex``: the primary keys of the rows holding each value, in a
/// persistent hash trie (a CHAMP: compressed hash-array mapped prefix tree).
///
/// Each node takes 6 bits of a value's 64-bit hash, from the highest down (the last level the
/// 4 lowest), and keeps the entries and child nodes of the 64 slots those bits choose in two
/// packed arrays, marked in two bitmaps: entries sorted by hash are in the trie's order, so
/// that a whole index is built at once from a sort (``init(_:)``), without inserting. A change copies only the nodes on its path that another version of the index (a
/// published table) still holds — about log₆₄(n) nodes of at most 64 slots — and writes the
/// others in place, so that a commit changing one row costs the same on a store of 10,000 rows
/// as on one of 10 million. (The index it replaces spread values over 4,096 fixed buckets: every
/// commit copied the list of buckets, and each bucket grew with the store.) Values whose full
/// hashes are equal share a collision node, searched in order.
///
/// Values are told apart by `StoredValue`'s `==`, as a `Dictionary` would.
struct HashedValueTrie: Sendable {
    typealias Keys = ColumnIndex.Keys

    /// One value and the rows holding it.
    struct Entry: Sendable {
        var hash: UInt64
        var value: StoredValue
        var keys: Keys
    }

    /// A node of the trie.
    ///
    /// `@unchecked Sendable`: a node is written only through the trie that holds the sole
    /// reference to it (`isKnownUniquelyReferenced`): a node that another version of the trie
    /// holds, a published table on another queue included, is copied first. Nodes that other
    /// versions can see are never written.
    final class Node: @unchecked Sendable {
        /// The slots holding an entry.
        var dataMap: UInt64 = 0
        /// The slots holding a child node.
        var nodeMap: UInt64 = 0
        /// The entries, in slot order; in a collision node, every entry (all of one hash).
        var entries: [Entry] = []
        /// The child nodes, in slot order.
        var children: [Node] = []
        /// Whether this is a collision node: its entries share one full hash, `entries[0].hash`.
        var isCollision = false

        init() {}

        init(copying node: Node) {
            dataMap = node.dataMap
            nodeMap = node.nodeMap
            entries = node.entries
            children = node.children
            isCollision = node.isCollision
        }

        /// A collision node of `entries`, all of one hash.
        init(collisionOf entries: [Entry]) {
            self.entries = entries
            isCollision = true
        }
    }

    private var root = Node()

    init() {}

    /// The root node's identity: the same while nothing changed the trie, or every change was
    /// made in place (for tests).
    var rootIdentity: ObjectIdentifier { ObjectIdentifier(root) }

    /// How many values the trie holds (a walk of every node: for tests).
    var valueCount: Int {
        func count(_ node: Node) -> Int {
            node.children.reduce(node.entries.count) { $0 + count($1) }
        }
        return count(root)
    }

    /// The trie of `pairs` (a value and the primary key of a row holding it), built at once:
    /// the pairs sorted by hash, values merged, and each node made in one pass over its part
    /// (about a third of the time of inserting a million rows one by one, which visits nodes in
    /// random order).
    /// (`hashing`: tests give hashes of their own, to make collisions and deep paths.)
    init(_ pairs: [(value: StoredValue, key: Int64)], hashing: (StoredValue) -> UInt64 = Self.hash(of:)) {
        var hashed = pairs.indices.map { (hash: hashing(pairs[$0].value), position: $0) }
        hashed.sort { $0.hash < $1.hash }
        var entries: [Entry] = []
        entries.reserveCapacity(hashed.count)
        var start = 0
        while start < hashed.count {
            // One hash: its distinct values (usually one) take every row holding them.
            var end = start + 1
            while end < hashed.count && hashed[end].hash == hashed[start].hash {
                end += 1
            }
            let first = entries.count
            for item in hashed[start..<end] {
                let (value, key) = pairs[item.position]
                if let same = entries[first...].firstIndex(where: { $0.value == value }) {
                    switch entries[same].keys {
                    case .one(let other):
                        entries[same].keys = .several([other, key])
                    case .several(var keys):
                        entries[same].keys = .one(0)
                        keys.append(key)
                        entries[same].keys = .several(keys)
                    }
                } else {
                    entries.append(Entry(hash: item.hash, value: value, keys: .one(key)))
                }
            }
            start = end
        }
        root = Self.node(of: entries[...], level: 0)
    }

    /// The node at `level` of `entries`, sorted by hash, every one with a distinct value, all
    /// in the slots of one node at that level.
    private static func node(of entries: ArraySlice<Entry>, level: Int) -> Node {
        let node = Node()
        var start = entries.startIndex
        while start < entries.endIndex {
            let slot = Self.slot(entries[start].hash, level)
            var end = start + 1
            while end < entries.endIndex && Self.slot(entries[end].hash, level) == slot {
                end += 1
            }
            if end - start == 1 {
                node.entries.append(entries[start])
                node.dataMap |= 1 &<< slot
            } else {
                node.children.append(
                    entries[start].hash == entries[end - 1].hash
                        ? Node(collisionOf: Array(entries[start..<end]))
                        : Self.node(of: entries[start..<end], level: level + 1))
                node.nodeMap |= 1 &<< slot
            }
            start = end
        }
        return node
    }

    /// The slot of `hash` in a node at `level` (0 for the root): 6 bits of it, from the
    /// highest down; at level 10, the 4 lowest. Different hashes part by level 10: only a
    /// collision node (which takes no slot) lies below it.
    @inline(__always)
    private static func slot(_ hash: UInt64, _ level: Int) -> UInt64 {
        (hash &<< UInt64(6 * level)) &>> 58
    }

    /// The slot of `hash` in a node at `level`, as a bit.
    @inline(__always)
    private static func bit(_ hash: UInt64, _ level: Int) -> UInt64 {
        1 &<< slot(hash, level)
    }

    /// The position, in a packed array marked by `map`, of the slot `bit`.
    @inline(__always)
    private static func position(_ map: UInt64, _ bit: UInt64) -> Int {
        (map & (bit &- 1)).nonzeroBitCount
    }

    /// The hash a value is placed by.
    static func hash(of value: StoredValue) -> UInt64 {
        UInt64(bitPattern: Int64(value.hashValue))
    }

    /// The rows holding `value`, or `nil`.
    subscript(value: StoredValue) -> Keys? {
        get { keys(for: value, hash: Self.hash(of: value)) }
        set { setKeys(newValue, for: value, hash: Self.hash(of: value)) }
    }

    /// The rows holding `value`, whose hash is `hash`. (Tests pass hashes of their own, to
    /// make collisions and deep paths.)
    func keys(for value: StoredValue, hash: UInt64) -> Keys? {
        var node = root
        var level = 0
        while true {
            if node.isCollision {
                guard node.entries.first?.hash == hash else { return nil }
                return node.entries.first { $0.value == value }?.keys
            }
            let bit = Self.bit(hash, level)
            if node.dataMap & bit != 0 {
                let entry = node.entries[Self.position(node.dataMap, bit)]
                return entry.hash == hash && entry.value == value ? entry.keys : nil
            }
            guard node.nodeMap & bit != 0 else { return nil }
            node = node.children[Self.position(node.nodeMap, bit)]
            level += 1
        }
    }

    /// Sets the rows holding `value` (whose hash is `hash`), or removes the value with `nil`.
    mutating func setKeys(_ keys: Keys?, for value: StoredValue, hash: UInt64) {
        modifyKeys(for: value, hash: hash) { $0 = keys }
    }

    /// Changes the rows holding `value` (whose hash is `hash`) in place: `body` gets them
    /// (`nil` when no row holds it) and sets `nil` to remove the value. The keys are not copied
    /// for it unless another version of the index holds them.
    mutating func modifyKeys(for value: StoredValue, hash: UInt64, _ body: (inout Keys?) -> Void) {
        Self.modify(&root, value, hash, level: 0, body)
    }

    /// ``modifyKeys(for:hash:_:)`` in the subtree of `node`, a node at `level`, copying the
    /// nodes on the way that are shared.
    private static func modify(
        _ node: inout Node, _ value: StoredValue, _ hash: UInt64, level: Int, _ body: (inout Keys?) -> Void
    ) {
        if !isKnownUniquelyReferenced(&node) {
            node = Node(copying: node)
        }
        if node.isCollision {
            if node.entries[0].hash == hash {
                if let position = node.entries.firstIndex(where: { $0.value == value }) {
                    if let keys = take(&node.entries[position], body) {
                        node.entries[position].keys = keys
                    } else {
                        node.entries.remove(at: position)
                    }
                } else if let keys = added(body) {
                    node.entries.append(Entry(hash: hash, value: value, keys: keys))
                }
                return
            }
            guard let keys = added(body) else { return }
            // Another hash reaches the collision node: it moves one level down, under a node
            // that tells the two apart.
            let parent = Node()
            parent.nodeMap = Self.bit(node.entries[0].hash, level)
            parent.children = [node]
            node = parent
            insert(&node, Entry(hash: hash, value: value, keys: keys), level: level)
            return
        }
        let bit = Self.bit(hash, level)
        if node.dataMap & bit != 0 {
            let position = Self.position(node.dataMap, bit)
            if node.entries[position].hash == hash && node.entries[position].value == value {
                if let keys = take(&node.entries[position], body) {
                    node.entries[position].keys = keys
                } else {
                    node.entries.remove(at: position)
                    node.dataMap &= ~bit
                }
                return
            }
            guard let keys = added(body) else { return }
            insert(&node, Entry(hash: hash, value: value, keys: keys), level: level)
            return
        }
        if node.nodeMap & bit != 0 {
            let position = Self.position(node.nodeMap, bit)
            modify(&node.children[position], value, hash, level: level + 1, body)
            let child = node.children[position]
            if child.children.isEmpty && child.entries.count <= 1 {
                // A child left with one entry (or none) gives it back to this node.
                let remaining = child.entries.first
                node.children.remove(at: position)
                node.nodeMap &= ~bit
                if let remaining {
                    node.entries.insert(remaining, at: Self.position(node.dataMap, bit))
                    node.dataMap |= bit
                }
            }
            return
        }
        guard let keys = added(body) else { return }
        node.entries.insert(Entry(hash: hash, value: value, keys: keys), at: Self.position(node.dataMap, bit))
        node.dataMap |= bit
    }

    /// What `body` makes of an entry's keys, taken out of the entry first so that they are
    /// not copied to be changed; `nil` removes the entry.
    private static func take(_ entry: inout Entry, _ body: (inout Keys?) -> Void) -> Keys? {
        var keys: Keys? = entry.keys
        entry.keys = .one(0)
        body(&keys)
        return keys
    }

    /// What `body` makes of no keys: the keys of a new entry, or `nil` for none.
    private static func added(_ body: (inout Keys?) -> Void) -> Keys? {
        var keys: Keys?
        body(&keys)
        return keys
    }

    /// Inserts `entry`, whose value the subtree does not hold, into `node`, a node at `level`
    /// that is not a collision node and is not shared.
    private static func insert(_ node: inout Node, _ entry: Entry, level: Int) {
        let bit = Self.bit(entry.hash, level)
        if node.dataMap & bit != 0 {
            // Two values in one slot: they move into a child node that tells them apart.
            let position = Self.position(node.dataMap, bit)
            let existing = node.entries.remove(at: position)
            node.dataMap &= ~bit
            var child: Node
            if existing.hash == entry.hash {
                child = Node(collisionOf: [existing, entry])
            } else {
                child = Node()
                insert(&child, existing, level: level + 1)
                insert(&child, entry, level: level + 1)
            }
            node.children.insert(child, at: Self.position(node.nodeMap, bit))
            node.nodeMap |= bit
        } else if node.nodeMap & bit != 0 {
            let position = Self.position(node.nodeMap, bit)
            modify(&node.children[position], entry.value, entry.hash, level: level + 1) { $0 = entry.keys }
        } else {
            node.entries.insert(entry, at: Self.position(node.dataMap, bit))
            node.dataMap |= bit
        }
    }

    /// Every value and its rows, in no particular order (for tests).
    var entries: [(value: StoredValue, keys: Keys)] {
        var result: [(value: StoredValue, keys: Keys)] = []
        var pending = [root]
        while let node = pending.popLast() {
            result += node.entries.map { ($0.value, $0.keys) }
            pending += node.children
        }
        return result
    }
}
