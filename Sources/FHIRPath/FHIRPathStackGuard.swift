import FHIRCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps a recursive walk (parser, evaluator, checker) from overflowing the stack of the thread that
/// runs it, so that a deeply nested expression ends in a clear error rather than a crash.
///
/// The nesting limits of ``FHIRPathParser`` bound the depth of every tree, but not the frame sizes of
/// the build (debug frames are several times larger than release ones) nor the stack of the calling
/// thread (8 MB for a main thread, 512 KB for secondary threads on Apple platforms). The guard is only
/// consulted past a few levels of nesting, and learns the thread's stack bounds on first use.
struct FHIRPathStackGuard {
    /// Stack kept free below the deepest frame the walk may reach.
    static let reserve: UInt = 96 * 1024

    private var lowestAllowed: UInt?

    init() {}

    /// True when the walk is within ``reserve`` of the end of the thread's stack.
    mutating func isExhausted() -> Bool {
        let current = Self.currentAddress()
        if lowestAllowed == nil { lowestAllowed = Self.cachedLowBound(near: current) + Self.reserve }
        return current < (lowestAllowed ?? 0)
    }

    @inline(never)
    private static func currentAddress() -> UInt {
        var marker: UInt8 = 0
        return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
    }

    /// A thread-specific slot for each thread's stack bound: finding it can be slow (on Linux, for the
    /// main thread, glibc reads /proc/self/maps), and evaluations are many.
    private static let boundKey: pthread_key_t? = {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }()

    private static func cachedLowBound(near current: UInt) -> UInt {
        if let key = boundKey, let stored = pthread_getspecific(key) { return UInt(bitPattern: stored) }
        let bound = stackLowBound(near: current)
        if let key = boundKey { _ = pthread_setspecific(key, UnsafeRawPointer(bitPattern: bound)) }
        return bound
    }

    /// The lowest address of the current thread's stack (stacks grow down on every supported platform).
    private static func stackLowBound(near current: UInt) -> UInt {
        #if canImport(Glibc)
        // pthread_getattr_np is a GNU extension the Glibc module does not export; look it up instead.
        typealias GetAttributes = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_getattr_np") else { return current &- 256 * 1024 }
        let getAttributes = unsafeBitCast(symbol, to: GetAttributes.self)
        var attributes = pthread_attr_t()
        guard getAttributes(pthread_self(), &attributes) == 0 else { return current &- 256 * 1024 }
        defer { pthread_attr_destroy(&attributes) }
        var address: UnsafeMutableRawPointer?
        var size = 0
        guard pthread_attr_getstack(&attributes, &address, &size) == 0, let address else { return current &- 256 * 1024 }
        return UInt(bitPattern: address)
        #elseif canImport(Darwin)
        let top = UInt(bitPattern: pthread_get_stackaddr_np(pthread_self()))
        return top &- UInt(pthread_get_stacksize_np(pthread_self()))
        #else
        return current &- 256 * 1024
        #endif
    }
}
