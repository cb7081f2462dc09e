import FuzzSupport

/// libFuzzer's entry point: the first byte selects options, the rest is a store file opened (and migrated) through a `ContextManager`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    Targets.open(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
