import Foundation
import FuzzSupport

// The program is built with the fuzz targets (`-sanitize=fuzzer,address`), so that theirs is
// the only build of the library: libFuzzer's `main` is linked in whole, and runs the program.
// libFuzzer calls `LLVMFuzzerInitialize` before anything else, with the arguments: the seeds
// are written there, and the program exits before any fuzzing.

/// Writes the seeds into the directory of the first argument, and exits.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
    guard argc.pointee == 2, let argument = argv.pointee[1] else {
        FileHandle.standardError.write(Data("usage: fuzz-seeds <corpus directory>\n".utf8))
        exit(2)
    }
    let corpus = URL(fileURLWithPath: String(cString: argument), isDirectory: true)
    do {
        let count = try writeSeeds(to: corpus)
        print("fuzz-seeds: wrote \(count) seeds to \(corpus.path)")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("fuzz-seeds: \(error)\n".utf8))
        exit(1)
    }
}

/// Never called: the program exits in ``initialize(_:_:)``.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    0
}
