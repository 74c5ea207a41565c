import CGlibcMalloc

/// The heap settings of every CareGate executable (`caregate`, `caregate-bench`), applied by
/// ``CommandLineRunner/run(_:)`` before a command runs, so that a benchmark measures the heap the
/// production binary has.
enum HeapTuning {
    /// Grows the heap in steps of 16 MB, not page by page: imports allocate on several threads, and each of
    /// glibc's per-thread arenas otherwise asks the kernel for more with an mprotect call at a time.
    static func apply() {
        _ = mallopt(M_TOP_PAD, 16 << 20)
    }
}
