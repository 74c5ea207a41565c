import Foundation

/// The metadata's child names laid out for a walk that visits every element of a tree (validation): one
/// flat table of slots for all contexts, found by a context's index (``ResolvedChild/contextIndex``) and
/// the UTF-8 bytes of the child's name, handing out a pointer to a slot of plain values.
///
/// ``NameTable`` returns a ``ResolvedChild`` reference, which the caller retains and releases, and copies
/// of the table's arrays cost the same again per lookup; here nothing handed out is counted: the slot
/// holds the definition's hot facts (order, maximum, choice, array) as plain integers and the definition
/// itself as an `Unmanaged` reference, read in place by the walk.
///
/// ## Lifetime
/// The storage belongs to `ChildLookupStorage`, owned by the ``FHIRMetadata`` that built it and
/// freed with it; every `Unmanaged` reference in a slot points at a ``ResolvedChild`` or ``ElementInfo``
/// held by the same metadata. A `ChildLookup` and every pointer it returns are therefore valid only while
/// that metadata is alive: a walk must hold the metadata strongly (as `ValidationWalk` does in its
/// `metadata` property) for as long as it uses them.
public struct ChildLookup {
    /// One instance name of one context.
    public struct Slot: Sendable {
        /// The name's ``ChildLookup/hash(_:)``; `keyLength` 0 marks an empty slot (names are not empty).
        @usableFromInline let hash: UInt64
        @usableFromInline let keyOffset: Int32
        @usableFromInline let keyLength: Int32
        /// The definition's position in its context (``ElementInfo/order``).
        public let order: Int32
        /// The maximum cardinality, -1 for `*`.
        public let maximum: Int32
        @usableFromInline let flags: UInt8
        /// What the name resolves to (not retained: see the type's lifetime note).
        public let resolved: Unmanaged<ResolvedChild>
        /// Its definition (not retained), for telling definitions apart by identity.
        public let info: Unmanaged<ElementInfo>

        @inlinable public var isChoice: Bool { flags & 1 != 0 }
        /// Instances hold a list: the maximum is not 1.
        @inlinable public var isArray: Bool { flags & 2 != 0 }
        /// The definition is `extension` or `modifierExtension` of type Extension.
        @inlinable public var isExtensionField: Bool { flags & 4 != 0 }

        init(hash: UInt64, keyOffset: Int32, keyLength: Int32, child: ResolvedChild) {
            self.hash = hash
            self.keyOffset = keyOffset
            self.keyLength = keyLength
            let info = child.info
            order = Int32(truncatingIfNeeded: info.order)
            maximum = info.max.map { Int32(truncatingIfNeeded: $0) } ?? -1
            var flags: UInt8 = info.isChoice ? 1 : 0
            if info.isArray { flags |= 2 }
            if child.notableType == .extension, info.name == "extension" || info.name == "modifierExtension" { flags |= 4 }
            self.flags = flags
            resolved = Unmanaged.passUnretained(child)
            self.info = Unmanaged.passUnretained(info)
        }

        static let empty = Slot(hashOnly: 0)
        private init(hashOnly: UInt64) {
            hash = hashOnly
            keyOffset = 0
            keyLength = 0
            order = 0
            maximum = 0
            flags = 0
            // Never read: an empty slot is told by its key length. Any live object serves as a placeholder.
            resolved = Unmanaged.passUnretained(ChildLookupStorage.placeholderChild)
            info = Unmanaged.passUnretained(ChildLookupStorage.placeholderChild.info)
        }
    }

    /// One context: where its slots are, and its definitions' counts.
    public struct Context: Sendable {
        @usableFromInline let slotStart: Int32
        /// The slot count minus 1 (a power of two minus 1); -1 for a context with no children.
        @usableFromInline let mask: Int32
        /// How many element definitions the context has (``ElementInfo/order`` is below it).
        public let definitionCount: Int
        @usableFromInline let requiredStart: Int32
        @usableFromInline let requiredCount: Int32
        /// Where its ``Representation`` table starts, and that table's size minus 1 (-1: none).
        @usableFromInline let representationStart: Int32
        @usableFromInline let representationMask: Int32

        @usableFromInline static let none = Context(
            slotStart: 0, mask: -1, definitionCount: 0, requiredStart: 0, requiredCount: 0, representationStart: 0, representationMask: -1)
    }

    @usableFromInline let slots: UnsafePointer<Slot>
    @usableFromInline let keyBytes: UnsafePointer<UInt8>
    @usableFromInline let contexts: UnsafePointer<Context>
    @usableFromInline let contextCount: Int
    @usableFromInline let required: UnsafePointer<Unmanaged<ElementInfo>>
    @usableFromInline let representations: UnsafePointer<Representation>

    /// A child name by the 16 bytes of its `String` value, pointing at its slot: the first place a
    /// lookup tries. Two `String` values whose bytes are the same are the same text (a small string's
    /// bytes are its UTF-8 code units, a large one's point at its storage, which `ChildLookupStorage`
    /// keeps alive for the keys), so a hit is always right; a miss (a name in another representation,
    /// or longer than a small string) goes on to the byte comparison. The short names that make most
    /// of a resource are found with two word comparisons and no hashing of their bytes.
    public struct Representation: Sendable {
        @usableFromInline let low: UInt64
        /// 0 in an empty entry (no `String` value has an all-zero upper word).
        @usableFromInline let high: UInt64
        @usableFromInline let slot: Int32

        @usableFromInline static let empty = Representation(low: 0, high: 0, slot: 0)
    }

    /// The context at `index` (a ``ResolvedChild/contextIndex``); one without children for an index the
    /// metadata did not give (-1).
    @inlinable
    public func context(at index: Int) -> Context {
        index >= 0 && index < contextCount ? contexts[index] : .none
    }

    /// The definitions of `context` that must occur (min > 0), in definition order, not retained.
    @inlinable
    public func required(of context: Context) -> UnsafeBufferPointer<Unmanaged<ElementInfo>> {
        UnsafeBufferPointer(start: required + Int(context.requiredStart), count: Int(context.requiredCount))
    }

    /// The slot of the child named `name` in `context`, nil when the context has no such child. The
    /// pointer is valid while the metadata is (see the type's lifetime note).
    ///
    /// Inlined, so that a caller reading the name in place does not retain it: the common case reads
    /// only the name's two words; the byte comparison is a call of its own.
    @inlinable @inline(__always)
    public func child(named name: String, in context: Context) -> UnsafePointer<Slot>? {
        guard context.mask >= 0 else { return nil }
        let (low, high) = unsafeBitCast(name, to: (UInt64, UInt64).self)
        let representationMask = Int(context.representationMask)
        let table = representations + Int(context.representationStart)
        var position = Self.representationHash(low, high) & representationMask
        while true {
            let entry = table + position
            if entry.pointee.high == 0 { break }
            if entry.pointee.low == low, entry.pointee.high == high { return slots + Int(entry.pointee.slot) }
            position = (position + 1) & representationMask
        }
        return child(byBytesOf: name, in: context)
    }

    /// ``child(named:in:)`` by the name's UTF-8 bytes: for a name whose `String` value is in another
    /// form than the table's (longer than a small string, or not known to the context at all).
    @usableFromInline @inline(never)
    func child(byBytesOf name: String, in context: Context) -> UnsafePointer<Slot>? {
        if let found = name.utf8.withContiguousStorageIfAvailable({ find($0, in: context) }) { return found }
        return Array(name.utf8).withUnsafeBufferPointer { find($0, in: context) }
    }

    @usableFromInline
    func find(_ bytes: UnsafeBufferPointer<UInt8>, in context: Context) -> UnsafePointer<Slot>? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        let hash = Self.hash(bytes)
        let mask = Int(context.mask)
        let start = slots + Int(context.slotStart)
        var index = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = start + index
            let length = Int(slot.pointee.keyLength)
            if length == 0 { return nil }
            if slot.pointee.hash == hash, length == bytes.count, memcmp(keyBytes + Int(slot.pointee.keyOffset), base, length) == 0 {
                return slot
            }
            index = (index + 1) & mask
        }
    }

    @inlinable @inline(__always)
    static func representationHash(_ low: UInt64, _ high: UInt64) -> Int {
        var hash = (low ^ (high &* 0x9E37_79B9_7F4A_7C15)) &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 32
        return Int(truncatingIfNeeded: hash)
    }

    /// The names' byte hash (``Swift/String/byteHash``, FNV-1a over 8-byte words), as a table key.
    @inlinable @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        UInt64(truncatingIfNeeded: String.byteHash(of: bytes))
    }
}

/// The memory of a ``ChildLookup``: allocated once when the metadata is made, freed when it goes.
final class ChildLookupStorage: @unchecked Sendable {
    /// A definition to fill empty slots' unread references with (never visited).
    static let placeholderChild = ResolvedChild(
        info: ElementInfo(path: "Element", name: "", types: [], min: 0, max: nil, isChoice: false, isModifier: false,
                          isSummary: false, representation: .element, requiredBinding: nil, childContext: nil, order: 0),
        type: "Element")

    private let slots: UnsafeMutableBufferPointer<ChildLookup.Slot>
    private let keyBytes: UnsafeMutableBufferPointer<UInt8>
    private let contexts: UnsafeMutableBufferPointer<ChildLookup.Context>
    private let required: UnsafeMutableBufferPointer<Unmanaged<ElementInfo>>
    private let representations: UnsafeMutableBufferPointer<ChildLookup.Representation>
    /// The definitions the slots point at, kept alive here too (the metadata holds them as well).
    private let owned: [ContextDefinition]
    /// The names whose `String` bytes the representation tables hold: kept alive, so that no other
    /// string can come to have the same bytes (a large string's bytes hold its storage's address).
    private let names: [String]

    /// Lays out `contexts` (by their index) into flat tables.
    init(contexts definitions: [ContextDefinition]) {
        owned = definitions
        var allSlots: [ChildLookup.Slot] = []
        var allKeys: [UInt8] = []
        var allContexts: [ChildLookup.Context] = []
        var allRequired: [Unmanaged<ElementInfo>] = []
        var allRepresentations: [ChildLookup.Representation] = []
        var allNames: [String] = []
        for definition in definitions {
            let requiredStart = Int32(allRequired.count)
            allRequired += definition.required.map { Unmanaged.passUnretained($0) }
            let requiredCount = Int32(allRequired.count) - requiredStart
            let names = Array(definition.children)
            guard !names.isEmpty else {
                allContexts.append(ChildLookup.Context(
                    slotStart: 0, mask: -1, definitionCount: definition.elements.count,
                    requiredStart: requiredStart, requiredCount: requiredCount, representationStart: 0, representationMask: -1))
                continue
            }
            var capacity = 4
            while capacity < names.count * 2 { capacity <<= 1 }
            let start = allSlots.count
            let representationStart = allRepresentations.count
            allSlots += repeatElement(ChildLookup.Slot.empty, count: capacity)
            allRepresentations += repeatElement(ChildLookup.Representation.empty, count: capacity)
            for (key, child) in names {
                let bytes = Array(key.utf8)
                let hash = bytes.withUnsafeBufferPointer(ChildLookup.hash)
                var index = Int(truncatingIfNeeded: hash) & (capacity - 1)
                while allSlots[start + index].keyLength != 0 { index = (index + 1) & (capacity - 1) }
                allSlots[start + index] = ChildLookup.Slot(
                    hash: hash, keyOffset: Int32(allKeys.count), keyLength: Int32(bytes.count), child: child)
                allKeys += bytes
                // The name made anew from its bytes, in the standard library's usual form for that text
                // (a short one in place, as a parser's names are).
                let name = String(decoding: bytes, as: UTF8.self)
                allNames.append(name)
                let (low, high) = unsafeBitCast(name, to: (UInt64, UInt64).self)
                var position = ChildLookup.representationHash(low, high) & (capacity - 1)
                while allRepresentations[representationStart + position].high != 0 { position = (position + 1) & (capacity - 1) }
                allRepresentations[representationStart + position] = ChildLookup.Representation(
                    low: low, high: high, slot: Int32(start + index))
            }
            allContexts.append(ChildLookup.Context(
                slotStart: Int32(start), mask: Int32(capacity - 1), definitionCount: definition.elements.count,
                requiredStart: requiredStart, requiredCount: requiredCount,
                representationStart: Int32(representationStart), representationMask: Int32(capacity - 1)))
        }
        func copy<T>(_ values: [T]) -> UnsafeMutableBufferPointer<T> {
            let buffer = UnsafeMutableBufferPointer<T>.allocate(capacity: Swift.max(values.count, 1))
            _ = buffer.initialize(fromContentsOf: values)
            return buffer
        }
        slots = copy(allSlots)
        keyBytes = copy(allKeys)
        contexts = copy(allContexts)
        required = copy(allRequired)
        representations = copy(allRepresentations)
        self.names = allNames
    }

    deinit {
        // Every element type is trivial: freeing is all there is to do.
        slots.deallocate()
        keyBytes.deallocate()
        contexts.deallocate()
        required.deallocate()
        representations.deallocate()
    }

    var lookup: ChildLookup {
        ChildLookup(slots: UnsafePointer(slots.baseAddress!), keyBytes: UnsafePointer(keyBytes.baseAddress!),
                    contexts: UnsafePointer(contexts.baseAddress!), contextCount: owned.count,
                    required: UnsafePointer(required.baseAddress!), representations: UnsafePointer(representations.baseAddress!))
    }
}
