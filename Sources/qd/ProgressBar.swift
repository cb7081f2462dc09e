import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A progress bar on standard error, drawn only when it is a terminal (nothing when piped
/// or redirected), redrawn when the percentage changes.
///
/// `@unchecked Sendable`: its state lives on a private serial queue.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let enabled: Bool
    private let queue = DispatchQueue(label: "qd.progress")
    // Confined to `queue`.
    private var lastPercent = -1
    private var drawn = false

    init(_ label: String) {
        self.label = label
        enabled = isatty(STDERR_FILENO) == 1
    }

    /// Shows `completed` of `total`.
    func update(_ completed: Int, of total: Int) {
        guard enabled else { return }
        queue.sync {
            let percent = total > 0 ? min(100, completed * 100 / total) : 100
            guard percent != lastPercent else { return }
            lastPercent = percent
            drawn = true
            let width = 30
            let filled = percent * width / 100
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)% \(completed)/\(total)".utf8))
        }
    }

    /// Clears the bar's line.
    func finish() {
        guard enabled else { return }
        queue.sync {
            if drawn {
                FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
            }
        }
    }
}
