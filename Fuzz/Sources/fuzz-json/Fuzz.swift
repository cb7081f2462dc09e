import FuzzSupport

/// libFuzzer's entry point: the input is a JSON store document (`StoreDecoding.decodeJSONDocument`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    Targets.json(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
