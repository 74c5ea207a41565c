import ExtrasBase64

/// Base64url without padding (RFC 7515 §2), through swift-extras-base64, the encoder jwt-kit uses: the
/// one base64url of the app server (the key id of ``ServerKey``); tokens are encoded by jwt-kit itself.
enum Base64URL {
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64.encodeToString(bytes: bytes, options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }
}
