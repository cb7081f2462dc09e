import FuzzSupport

/// libFuzzer's entry point: the input is a journal file (`StoreDecoding.decodeJournal`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    Targets.journal(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
