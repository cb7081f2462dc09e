/// Where each value of an entity's rows lives in memory, and what it is stored as.
///
/// A row is a run of bytes with one typed field per slot (see ``FieldKind``): the columns
/// (attributes, then relationships) in ``rowSize`` bytes, which committed rows take, then the
/// transient attributes, which only objects have (``objectRowSize``). Fields are placed by
/// decreasing alignment, so that a row has no padding but at its end.
///
/// Fields are read with `load(as:)` (legal for any field, whatever the memory is bound to), trivial
/// ones written with `storeBytes`, the others initialized as their type and assigned through a
/// typed pointer.
///
/// `@unchecked Sendable`: every property is immutable after `init`, `defaults` included (a row
/// written once by `init` and only read afterwards, freed by `deinit`).
final class RowLayout: @unchecked Sendable {
    /// The kind of each slot's field: the columns, then the transient attributes.
    let kinds: [FieldKind]
    /// The byte offset of each slot's field in a row.
    let offsets: [Int]
    /// The offsets again, for the attribute wrappers of an object under construction (read
    /// through a thread-local pointer while its initializer runs).
    let offsetTable: UnsafeMutablePointer<UInt16>
    /// The slot of the field at each byte offset of an object's row (where a field starts).
    private let slotsByOffset: [UInt16]
    /// How many slots are columns (stored); the rest are transient.
    let columnCount: Int
    /// The bytes of a committed row (the columns), a multiple of 8.
    let rowSize: Int
    /// The bytes of an object's row (the columns and the transient attributes), a multiple of 8.
    let objectRowSize: Int
    /// The columns whose fields need destruction (hold reference-counted values).
    let nontrivialColumns: [Int]
    /// The slots, columns and transient ones, whose fields need destruction.
    let nontrivialSlots: [Int]
    /// An object's row of default values (``objectRowSize`` bytes), copied into new objects.
    let defaults: UnsafeMutableRawPointer

    /// The layout of rows whose columns hold `columnKinds` and whose objects also hold
    /// `transientKinds`, with the given default values (one per slot, each fitting its kind).
    init(columnKinds: [FieldKind], transientKinds: [FieldKind], defaults: [StoredValue]) {
        let kinds = columnKinds + transientKinds
        precondition(defaults.count == kinds.count, "QueueData: one default per slot")
        self.kinds = kinds
        self.columnCount = columnKinds.count
        var offsets = [Int](repeating: 0, count: kinds.count)
        func place(_ slots: Range<Int>, from start: Int) -> Int {
            // By decreasing alignment, so that no field needs padding before it.
            var end = start
            for slot in slots.sorted(by: { kinds[$0].alignment > kinds[$1].alignment }) {
                let alignment = kinds[slot].alignment
                end = (end + alignment - 1) / alignment * alignment
                offsets[slot] = end
                end += kinds[slot].size
            }
            return (end + 7) / 8 * 8
        }
        self.rowSize = place(0..<columnKinds.count, from: 0)
        self.objectRowSize = place(columnKinds.count..<kinds.count, from: rowSize)
        self.offsets = offsets
        precondition(objectRowSize <= Int(UInt16.max), "QueueData: an entity's row is limited to 65,535 bytes")
        offsetTable = .allocate(capacity: Swift.max(kinds.count, 1))
        for (slot, offset) in offsets.enumerated() {
            offsetTable[slot] = UInt16(offset)
        }
        var slotsByOffset = [UInt16](repeating: 0, count: Swift.max(objectRowSize, 1))
        for (slot, offset) in offsets.enumerated() {
            slotsByOffset[offset] = UInt16(slot)
        }
        self.slotsByOffset = slotsByOffset
        nontrivialColumns = (0..<columnKinds.count).filter { !kinds[$0].isTrivial }
        nontrivialSlots = kinds.indices.filter { !kinds[$0].isTrivial }
        self.defaults = .allocate(byteCount: Swift.max(objectRowSize, 8), alignment: 8)
        for slot in kinds.indices {
            guard Self.initialize(kinds[slot], self.defaults + offsets[slot], with: defaults[slot]) else {
                preconditionFailure("QueueData: the default \(defaults[slot]) does not fit its field \(kinds[slot])")
            }
        }
    }

    deinit {
        destroy(defaults, slots: nontrivialSlots)
        defaults.deallocate()
        offsetTable.deallocate()
    }

    /// The slot whose field starts at byte `offset`.
    func slot(atOffset offset: Int) -> Int {
        Int(slotsByOffset[offset])
    }

    /// Whether objects have fields that committed rows lack (transient attributes).
    var hasTransientSlots: Bool { kinds.count > columnCount }

    // MARK: Rows

    /// Initializes the columns of the row at `row` from `values` (one per column). Returns
    /// `false`, leaving the row uninitialized, if a value does not fit its column.
    func initializeRow(_ row: UnsafeMutableRawPointer, from values: UnsafeBufferPointer<StoredValue>) -> Bool {
        guard values.count == columnCount else { return false }
        for slot in 0..<columnCount where !Self.initialize(kinds[slot], row + offsets[slot], with: values[slot]) {
            destroy(row, slots: nontrivialColumns.filter { $0 < slot })
            return false
        }
        return true
    }

    /// ``initializeRow(_:from:)`` for an array.
    func initializeRow(_ row: UnsafeMutableRawPointer, from values: [StoredValue]) -> Bool {
        values.withUnsafeBufferPointer { initializeRow(row, from: $0) }
    }

    /// Initializes the fields of `row` with copies of `source`'s: the columns of a committed
    /// row (`byteCount` ``rowSize``), or every field of an object's row (``objectRowSize``).
    func initializeRow(_ row: UnsafeMutableRawPointer, copying source: UnsafeRawPointer, byteCount: Int) {
        // The trivial fields are bytes; the others are copied as values over their bytes
        // (initializing, so the copied bytes are never released).
        row.copyMemory(from: source, byteCount: byteCount)
        for slot in byteCount == objectRowSize ? nontrivialSlots : nontrivialColumns {
            struct Copy: FieldOperation {
                let target: UnsafeMutableRawPointer
                let source: UnsafeRawPointer
                func run<Field: RowField>(_: Field.Type) {
                    target.initializeMemory(as: Field.self, to: source.load(as: Field.self))
                }
            }
            let offset = offsets[slot]
            kinds[slot].dispatch(Copy(target: row + offset, source: source + offset))
        }
    }

    /// Destroys the given slots' fields of the row at `row`.
    func destroy(_ row: UnsafeMutableRawPointer, slots: [Int]) {
        for slot in slots {
            struct Destroy: FieldOperation {
                let pointer: UnsafeMutableRawPointer
                func run<Field: RowField>(_: Field.Type) {
                    pointer.assumingMemoryBound(to: Field.self).deinitialize(count: 1)
                }
            }
            kinds[slot].dispatch(Destroy(pointer: row + offsets[slot]))
        }
    }

    /// Destroys the columns of a committed row.
    func destroyRow(_ row: UnsafeMutableRawPointer) {
        destroy(row, slots: nontrivialColumns)
    }

    /// Destroys every field of an object's row.
    func destroyObjectRow(_ row: UnsafeMutableRawPointer) {
        destroy(row, slots: nontrivialSlots)
    }

    /// The value in `slot` of the row at `row`, in its stored form.
    func value(_ row: UnsafeRawPointer, slot: Int) -> StoredValue {
        struct Read: FieldOperation {
            let pointer: UnsafeRawPointer
            func run<Field: RowField>(_: Field.Type) -> StoredValue {
                pointer.load(as: Field.self).fieldValue
            }
        }
        return kinds[slot].dispatch(Read(pointer: row + offsets[slot]))
    }

    /// The values of the first `count` slots of the row at `row`, in their stored form.
    func values(_ row: UnsafeRawPointer, count: Int) -> [StoredValue] {
        // (`Array(unsafeUninitializedCapacity:)` is not specialized here: it looked the array's
        // storage type up at run time, on every call.)
        var values: [StoredValue] = []
        values.reserveCapacity(count)
        for slot in 0..<count {
            values.append(value(row, slot: slot))
        }
        return values
    }

    /// Replaces the value in `slot` of the row at `row`; `false`, changing nothing, if it does
    /// not fit the field.
    func setValue(_ value: StoredValue, in row: UnsafeMutableRawPointer, slot: Int) -> Bool {
        struct Assign: FieldOperation {
            let pointer: UnsafeMutableRawPointer
            let value: StoredValue
            func run<Field: RowField>(_: Field.Type) -> Bool {
                guard let field = Field(field: value) else { return false }
                if _isPOD(Field.self) {
                    pointer.storeBytes(of: field, as: Field.self)
                } else {
                    pointer.assumingMemoryBound(to: Field.self).pointee = field
                }
                return true
            }
        }
        return kinds[slot].dispatch(Assign(pointer: row + offsets[slot], value: value))
    }

    /// Whether `slot` holds the same value in the rows at `lhs` and `rhs`.
    func isSame(_ lhs: UnsafeRawPointer, _ rhs: UnsafeRawPointer, slot: Int) -> Bool {
        struct Compare: FieldOperation {
            let lhs: UnsafeRawPointer
            let rhs: UnsafeRawPointer
            func run<Field: RowField>(_: Field.Type) -> Bool {
                Field.isSameField(lhs.load(as: Field.self), rhs.load(as: Field.self))
            }
        }
        let offset = offsets[slot]
        return kinds[slot].dispatch(Compare(lhs: lhs + offset, rhs: rhs + offset))
    }

    /// Whether `slot` of the row at `row` holds `value`.
    func isSame(_ row: UnsafeRawPointer, slot: Int, as value: StoredValue) -> Bool {
        struct Compare: FieldOperation {
            let pointer: UnsafeRawPointer
            let value: StoredValue
            func run<Field: RowField>(_: Field.Type) -> Bool {
                guard let field = Field(field: value) else { return false }
                return Field.isSameField(pointer.load(as: Field.self), field)
            }
        }
        return kinds[slot].dispatch(Compare(pointer: row + offsets[slot], value: value))
    }

    /// Whether the first `count` slots of the rows at `lhs` and `rhs` hold the same values.
    func isSameRow(_ lhs: UnsafeRawPointer, _ rhs: UnsafeRawPointer, count: Int) -> Bool {
        lhs == rhs || !(0..<count).contains { !isSame(lhs, rhs, slot: $0) }
    }

    // MARK: Fields

    /// Initializes the field of `kind` at `pointer` with `value`; `false` if it does not fit.
    static func initialize(_ kind: FieldKind, _ pointer: UnsafeMutableRawPointer, with value: StoredValue) -> Bool {
        struct Initialize: FieldOperation {
            let pointer: UnsafeMutableRawPointer
            let value: StoredValue
            func run<Field: RowField>(_: Field.Type) -> Bool {
                guard let field = Field(field: value) else { return false }
                pointer.initializeMemory(as: Field.self, to: field)
                return true
            }
        }
        return kind.dispatch(Initialize(pointer: pointer, value: value))
    }
}
