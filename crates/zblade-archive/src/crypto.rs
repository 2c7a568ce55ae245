//! The archive's cryptography, in one place: the passphrase-derived master key (Argon2id),
//! fresh AES-256-GCM keys per batch, wrapping of batch keys under the master key, and share
//! grants sealed to another user's X25519 public key.
//!
//! Everything here is built from ring (AES-256-GCM, HKDF-SHA256, the system RNG), argon2 and
//! x25519-dalek; nothing is hand-rolled but the layout of the bytes, which is:
//!
//! - sealed data: `nonce (12) ‖ ciphertext ‖ tag (16)`, with associated data naming what the
//!   bytes are (archive, kind, batch), so a ciphertext moved under another name fails to open.
//! - a grant: `ephemeral X25519 public key (32) ‖ sealed`, the AES key being
//!   HKDF-SHA256(ECDH(ephemeral, recipient), info = both public keys).

use argon2::{Algorithm, Argon2, Params, Version};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result};

/// Bytes of every symmetric key.
pub const KEY_LEN: usize = 32;
/// Bytes of the AES-GCM tag.
const TAG_LEN: usize = 16;

/// Random bytes from the operating system.
pub fn random<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    SystemRandom::new()
        .fill(&mut out)
        .expect("the operating system's random number generator failed");
    out
}

/// Random bytes as lowercase hex: opaque ids that say nothing of what they name.
pub fn random_id() -> String {
    hex::encode(random::<16>())
}

/// A 256-bit AES-GCM key. Not `Debug`, not `Serialize`: it never reaches a log or a file
/// unwrapped.
#[derive(Clone)]
pub struct Key([u8; KEY_LEN]);

impl Key {
    /// A fresh random key.
    pub fn generate() -> Key {
        Key(random())
    }

    /// Wraps raw bytes (unwrapped from the vault or a grant).
    pub fn from_bytes(bytes: &[u8]) -> Result<Key> {
        let bytes: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| Error::Untrusted(format!("a key is {} bytes, not {KEY_LEN}", bytes.len())))?;
        Ok(Key(bytes))
    }

    /// The raw bytes (for wrapping only).
    pub fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    fn aead(&self) -> LessSafeKey {
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &self.0).expect("32-byte AES-256 key"))
    }

    /// Encrypts `plaintext`, bound to `aad`: `nonce ‖ ciphertext ‖ tag`. A random 96-bit nonce
    /// is safe here: a batch key seals one batch, the master key a few thousand wrapped keys.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let nonce = random::<NONCE_LEN>();
        let mut out = Vec::with_capacity(NONCE_LEN + plaintext.len() + TAG_LEN);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plaintext);
        let tag = self
            .aead()
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[NONCE_LEN..],
            )
            .expect("AES-GCM sealing of an in-memory buffer");
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// Decrypts what [`Key::seal`] made under the same `aad`; `None` when the key is wrong,
    /// the bytes were changed or they were sealed under another name.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN + TAG_LEN {
            return None;
        }
        let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN]).ok()?;
        let mut buffer = sealed[NONCE_LEN..].to_vec();
        let plain_len = self
            .aead()
            .open_in_place(nonce, Aad::from(aad), &mut buffer)
            .ok()?
            .len();
        buffer.truncate(plain_len);
        Some(buffer)
    }
}

/// The Argon2id parameters a master key was derived with, stored next to its salt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KdfParams {
    /// Always `argon2id`.
    pub algorithm: String,
    /// The salt, hex (16 random bytes).
    pub salt: String,
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over the memory.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl KdfParams {
    /// Fresh parameters: a random salt and RFC 9106's second recommended setting (64 MiB,
    /// 3 passes), with 1 lane since the derivation runs on one thread.
    pub fn generate() -> KdfParams {
        KdfParams {
            algorithm: "argon2id".into(),
            salt: hex::encode(random::<16>()),
            memory_kib: 64 * 1024,
            iterations: 3,
            parallelism: 1,
        }
    }

    /// Derives the master key from `passphrase`. The parameters come from a vault file, so
    /// absurd ones (a vault edited to make the machine swap or spin) are refused.
    pub fn derive(&self, passphrase: &str) -> Result<Key> {
        if self.algorithm != "argon2id" {
            return Err(Error::Untrusted(format!(
                "the vault's key derivation is {:?}; this zblade knows argon2id",
                self.algorithm
            )));
        }
        if !(8 * 1024..=4 * 1024 * 1024).contains(&self.memory_kib)
            || !(1..=64).contains(&self.iterations)
            || !(1..=16).contains(&self.parallelism)
        {
            return Err(Error::Untrusted(format!(
                "the vault's Argon2id parameters are out of range (memory {} KiB, {} passes, {} lanes)",
                self.memory_kib, self.iterations, self.parallelism
            )));
        }
        let salt = hex::decode(&self.salt)
            .ok()
            .filter(|s| s.len() >= 8)
            .ok_or_else(|| Error::Untrusted("the vault's salt is not hex of at least 8 bytes".into()))?;
        let params = Params::new(self.memory_kib, self.iterations, self.parallelism, Some(KEY_LEN))
            .map_err(|e| Error::Untrusted(format!("Argon2id parameters: {e}")))?;
        let mut out = [0u8; KEY_LEN];
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
            .hash_password_into(passphrase.as_bytes(), &salt, &mut out)
            .map_err(|e| Error::Environment(format!("deriving the master key: {e}")))?;
        Ok(Key(out))
    }
}

/// An X25519 key pair that receives share grants.
pub struct ShareIdentity {
    secret: x25519_dalek::StaticSecret,
}

/// The text form of a share public key: `zbpk1` then the 32 bytes, base64url.
const PUBLIC_PREFIX: &str = "zbpk1";

impl ShareIdentity {
    /// A fresh key pair.
    pub fn generate() -> ShareIdentity {
        ShareIdentity::from_secret(random())
    }

    /// The key pair of a stored secret.
    pub fn from_secret(secret: [u8; 32]) -> ShareIdentity {
        ShareIdentity {
            secret: x25519_dalek::StaticSecret::from(secret),
        }
    }

    /// The secret (to be wrapped into the vault).
    pub fn secret_bytes(&self) -> [u8; 32] {
        self.secret.to_bytes()
    }

    /// The public key in its text form, for `archive share --to`.
    pub fn public_text(&self) -> String {
        public_text(x25519_dalek::PublicKey::from(&self.secret).as_bytes())
    }

    /// Opens a grant sealed to this identity; `None` when it was sealed to someone else or
    /// changed on the way.
    pub fn open_grant(&self, grant: &[u8]) -> Option<Vec<u8>> {
        let ephemeral: [u8; 32] = grant.get(..32)?.try_into().ok()?;
        let ephemeral = x25519_dalek::PublicKey::from(ephemeral);
        let own = x25519_dalek::PublicKey::from(&self.secret);
        let key = grant_key(self.secret.diffie_hellman(&ephemeral).as_bytes(), &ephemeral, &own)?;
        key.open(b"zblade-archive/grant", &grant[32..])
    }
}

fn public_text(bytes: &[u8; 32]) -> String {
    use base64::Engine;
    format!(
        "{PUBLIC_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Reads a share public key's text form.
pub fn parse_public(text: &str) -> Result<[u8; 32]> {
    use base64::Engine;
    let bad = || {
        Error::Usage(format!(
            "{text:?} is not a zblade share key; ask the recipient for the line `zblade archive status` prints as `share key` (zbpk1…)"
        ))
    };
    let body = text.trim().strip_prefix(PUBLIC_PREFIX).ok_or_else(bad)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

/// A short, opaque fingerprint of a share public key: the tag grants are found by.
pub fn fingerprint(public: &[u8; 32]) -> String {
    hex::encode(&ring::digest::digest(&ring::digest::SHA256, public).as_ref()[..16])
}

/// Seals `plaintext` so only the holder of `recipient`'s secret can open it (ECIES over
/// X25519 with a fresh ephemeral key).
pub fn seal_grant(recipient: &[u8; 32], plaintext: &[u8]) -> Result<Vec<u8>> {
    let ephemeral = x25519_dalek::StaticSecret::from(random::<32>());
    let ephemeral_public = x25519_dalek::PublicKey::from(&ephemeral);
    let recipient = x25519_dalek::PublicKey::from(*recipient);
    let shared = ephemeral.diffie_hellman(&recipient);
    if !shared.was_contributory() {
        return Err(Error::Usage("that share key is not a usable X25519 public key".into()));
    }
    let key = grant_key(shared.as_bytes(), &ephemeral_public, &recipient)
        .ok_or_else(|| Error::Usage("that share key is not a usable X25519 public key".into()))?;
    let mut out = ephemeral_public.as_bytes().to_vec();
    out.extend(key.seal(b"zblade-archive/grant", plaintext));
    Ok(out)
}

fn grant_key(
    shared: &[u8; 32],
    ephemeral: &x25519_dalek::PublicKey,
    recipient: &x25519_dalek::PublicKey,
) -> Option<Key> {
    use ring::hkdf;
    let mut info = b"zblade-archive/grant-key".to_vec();
    info.extend_from_slice(ephemeral.as_bytes());
    info.extend_from_slice(recipient.as_bytes());
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"").extract(shared);
    let info = [info.as_slice()];
    let okm = prk.expand(&info, hkdf::HKDF_SHA256).ok()?;
    let mut out = [0u8; KEY_LEN];
    okm.fill(&mut out).ok()?;
    Some(Key(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_bytes_open_only_with_their_key_and_name() {
        let key = Key::generate();
        let sealed = key.seal(b"batch-1", b"hello");
        assert_eq!(key.open(b"batch-1", &sealed).as_deref(), Some(&b"hello"[..]));
        assert!(key.open(b"batch-2", &sealed).is_none(), "moved under another name");
        assert!(Key::generate().open(b"batch-1", &sealed).is_none(), "another key");
        let mut flipped = sealed.clone();
        flipped[14] ^= 1;
        assert!(key.open(b"batch-1", &flipped).is_none(), "a changed byte");
        assert!(key.open(b"batch-1", &sealed[..10]).is_none(), "too short");
    }

    #[test]
    fn the_master_key_depends_on_passphrase_and_salt_and_refuses_hostile_parameters() {
        let mut params = KdfParams::generate();
        params.memory_kib = 8 * 1024;
        params.iterations = 1;
        let a = params.derive("correct horse").unwrap();
        assert_eq!(a.bytes(), params.derive("correct horse").unwrap().bytes());
        assert_ne!(a.bytes(), params.derive("correct horsf").unwrap().bytes());
        let mut other_salt = params.clone();
        other_salt.salt = hex::encode([7u8; 16]);
        assert_ne!(a.bytes(), other_salt.derive("correct horse").unwrap().bytes());
        let mut greedy = params.clone();
        greedy.memory_kib = u32::MAX;
        assert!(matches!(greedy.derive("x"), Err(Error::Untrusted(_))));
        let mut other = params;
        other.algorithm = "md5".into();
        assert!(other.derive("x").is_err());
    }

    #[test]
    fn a_grant_opens_for_its_recipient_only() {
        let alice = ShareIdentity::generate();
        let mallory = ShareIdentity::generate();
        let public = parse_public(&alice.public_text()).unwrap();
        let grant = seal_grant(&public, b"the key").unwrap();
        assert_eq!(alice.open_grant(&grant).as_deref(), Some(&b"the key"[..]));
        assert!(mallory.open_grant(&grant).is_none());
        assert!(parse_public("zbpk1notbase64!").is_err());
        assert!(parse_public("ssh-ed25519 AAAA").is_err());
        // The all-zero point makes the shared secret all zeros: refused.
        assert!(seal_grant(&[0u8; 32], b"x").is_err());
        assert_eq!(fingerprint(&public).len(), 32);
    }
}
