import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// One connection's watch: closes it when a request's body has not ended ``requestTimeout`` after its
/// head, and tells the ``ConnectionRegistry`` when the connection has a request under way.
///
/// Hummingbird's idle timeout restarts with every part read, a body chunk included, so a body trickled a
/// byte at a time would hold the connection (and an upload place) for ever; the head itself arrives as
/// one part, so a head trickled in is bounded by the idle timeout. Sits after the HTTP codec, where a
/// request is a head, body parts and an end.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let registry: ConnectionRegistry
    private let requestTimeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var id: ObjectIdentifier?

    init(registry: ConnectionRegistry, requestTimeout: TimeAmount) {
        self.registry = registry
        self.requestTimeout = requestTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        id = ObjectIdentifier(context.channel)
        registry.register(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forget()
    }

    func channelInactive(context: ChannelHandlerContext) {
        forget()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if let id { registry.requestStarted(id) }
            deadline?.cancel()
            let loopContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) {
                // The body is not complete in time: the connection goes, and the handler reading it fails.
                loopContext.value.close(promise: nil)
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), let id { registry.requestAnswered(id) }
        context.write(data, promise: promise)
    }

    private func forget() {
        deadline?.cancel()
        deadline = nil
        if let id { registry.unregister(id) }
        id = nil
    }
}
