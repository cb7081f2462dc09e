import FuzzSupport

/// libFuzzer's entry point: the input is a journal file whose framing is fixed up first, so that it reaches the payload decoders.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    Targets.journalPayload(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
