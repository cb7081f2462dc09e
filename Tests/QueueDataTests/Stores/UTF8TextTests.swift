import Foundation
import Testing

@testable import QueueData

@Suite("UTF-8 text read from files")
struct UTF8TextTests {
    @Test("accepts and refuses exactly what String(validating:as:) does, on random and crafted bytes")
    func matchesTheStandardLibrary() {
        func check(_ bytes: [UInt8]) -> Bool {
            let ours = bytes.withUnsafeBytes { UTF8Text.string($0) }
            let reference = String(validating: bytes, as: UTF8.self)
            return ours == reference
        }
        let crafted: [[UInt8]] = [
            [], Array("plain ascii".utf8), Array("é, ß, 日本, 🎉".utf8), [0x80], [0xC0, 0x80], [0xC3], [0xE6, 0x97],
            [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF], [0xEF, 0xBF, 0xBD],
            [0x61, 0xEF, 0xBF, 0xBD, 0x80], [0xE2, 0x82, 0xAC, 0xE2, 0x82],
        ]
        for bytes in crafted {
            #expect(check(bytes), "\(bytes)")
        }
        var random = SeededGenerator(seed: 3)
        // Bytes drawn mostly from the ranges UTF-8 is made of, so that valid and invalid
        // sequences both come up often.
        let pool: [UInt8] = [
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0,
        ]
        var valid = 0
        for _ in 0..<20_000 {
            let length = Int(random.next() % 9)
            let bytes = (0..<length).map { _ in pool[Int(random.next() % UInt64(pool.count))] }
            if String(validating: bytes, as: UTF8.self) != nil { valid += 1 }
            if !check(bytes) {
                Issue.record("differs on \(bytes)")
                return
            }
        }
        #expect(valid > 1_000, "the random bytes include valid text")
    }
}
