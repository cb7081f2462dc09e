import Foundation
import Testing

@testable import QueueData

/// A constraint checked where a row's field lies (the scan of an attribute without an index)
/// answers what the constraint answers for the field's stored form.
@Suite("Attribute constraints")
struct AttributeConstraintTests {
    /// The row layout tests' samples, and values close to one another so that bounds fall
    /// between, on and beside them (canonically equal strings with other bytes among them).
    static let samples: [StoredValue] =
        RowLayoutTests.samples + [
            .integer(5), .integer(6), .integer(7), .double(1.5), .double(2.5), .double(-.infinity),
            .date(Date(timeIntervalSinceReferenceDate: 1)), .date(Date(timeIntervalSinceReferenceDate: 2)),
            .date(Date(timeIntervalSinceReferenceDate: .nan)),
            .string("a"), .string("ab"), .string("b"), .string("é"), .string("e\u{301}"), .string("\0"),
        ]

    @Test("a range, a list of values or a prefix checked on a row's field answers as on its stored form")
    func rowMatcherAgreesWithStoredForm() {
        var random = SeededGenerator(seed: 17)
        for type in RowLayoutTests.types {
            for isOptional in [false, true] {
                let kind = FieldKind(type, isOptional: isOptional)
                let fitting = Self.samples.filter { $0.fits(type, isOptional: isOptional) }
                guard let defaultValue = fitting.first else { continue }
                // The field between two others, so that it is not at offset 0.
                let layout = RowLayout(
                    columnKinds: [.bool, kind, .optionalString], transientKinds: [],
                    defaults: [.bool(false), defaultValue, .null])
                let row = UnsafeMutableRawPointer.allocate(byteCount: layout.rowSize, alignment: 16)
                defer { row.deallocate() }
                // How often a range was satisfied: the typed comparisons gave both answers.
                var ranges = 0
                var rangesSatisfied = 0
                for _ in 0..<400 {
                    let constraint = Self.constraint(&random, fieldValues: fitting.filter { $0 != .null })
                    let matcher = constraint.rowMatcher(slot: 1, layout: layout)
                    for _ in 0..<8 {
                        let value = fitting.randomElement(using: &random)!
                        #expect(layout.initializeRow(row, from: [.bool(true), value, .string("x")]))
                        let expected = constraint.isSatisfied(by: layout.value(row, slot: 1))
                        #expect(
                            matcher(row) == expected,
                            "\(constraint) on \(value) in a field of \(kind): \(!expected) against \(expected)")
                        layout.destroyRow(row)
                        if constraint.isRange, constraint.prefix == nil {
                            ranges += 1
                            rangesSatisfied += expected ? 1 : 0
                        }
                    }
                }
                if [.integer16, .integer32, .integer64, .double, .float, .date, .string].contains(type) {
                    #expect(
                        rangesSatisfied > ranges / 10 && rangesSatisfied < ranges * 9 / 10,
                        "\(kind): \(rangesSatisfied) of \(ranges) ranges satisfied")
                }
            }
        }
    }

    /// A random constraint: a range (either end open, included or not; its bounds mostly of the
    /// field's values, now and then of any kind), a list of values, or a prefix, with or without a
    /// range.
    static func constraint(_ random: inout SeededGenerator, fieldValues: [StoredValue]) -> AttributeConstraint {
        let boundValues = Int.random(in: 0..<4, using: &random) == 0 || fieldValues.isEmpty ? samples : fieldValues
        func bound() -> StoredValue? {
            Int.random(in: 0..<4, using: &random) == 0 ? nil : boundValues.randomElement(using: &random)!
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            return AttributeConstraint(
                attributeName: "field",
                values: (0..<Int.random(in: 0..<4, using: &random)).map { _ in samples.randomElement(using: &random)! })
        case 1:
            let prefix = ["", "a", "e", "é", "C", "s"].randomElement(using: &random)!
            var constraint = AttributeConstraint(attributeName: "field", prefix: prefix)
            if Bool.random(using: &random) {
                constraint.lowerBound = .string("a")
            }
            return constraint
        default:
            let lower = bound()
            let upper = bound()
            var constraint = AttributeConstraint(
                attributeName: "field", lowerBound: lower, includesLowerBound: Bool.random(using: &random),
                upperBound: upper, includesUpperBound: Bool.random(using: &random))
            if lower == nil, upper == nil {
                constraint.upperBound = .integer(6)
            }
            return constraint
        }
    }
}
