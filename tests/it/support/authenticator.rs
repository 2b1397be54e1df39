//! A software passkey, as a phone or a security key holds one: a P-256 key (ES256) that answers
//! WebAuthn's registration and sign-in ceremonies the way a browser hands them to the page, JSON
//! with base64url values, from whatever origin the test says the page had. Each answer counts its
//! signature up, as authenticators do; `reuse_counter` makes the next one repeat the last count,
//! as a cloned key would.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use p256::ecdsa::{Signature, SigningKey, signature::Signer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// User present, user verified; `ATTESTED` adds the new credential's data.
const PRESENT_AND_VERIFIED: u8 = 0x01 | 0x04;
const ATTESTED: u8 = 0x40;

pub struct SoftPasskey {
    key: SigningKey,
    pub credential_id: Vec<u8>,
    /// The account handle the site gave at registration, returned with every sign-in.
    user_handle: Vec<u8>,
    counter: u32,
}

impl SoftPasskey {
    pub fn new() -> Self {
        let key = loop {
            if let Ok(key) = SigningKey::from_slice(&rand::random::<[u8; 32]>()) {
                break key;
            }
        };
        Self { key, credential_id: rand::random::<[u8; 16]>().to_vec(), user_handle: Vec::new(), counter: 0 }
    }

    /// Answers the site's creation options (as its options endpoint sent them) from `origin`.
    pub fn register(&mut self, options: &Value, origin: &str) -> String {
        let key = &options["publicKey"];
        self.user_handle = B64.decode(key["user"]["id"].as_str().expect("a user id")).unwrap();
        let client_data = client_data("webauthn.create", key, origin);
        let mut auth_data = self.auth_data(key["rp"]["id"].as_str().expect("an RP id"), ATTESTED);
        auth_data.extend_from_slice(&[0; 16]); // no AAGUID: "none" attestation
        auth_data.extend_from_slice(&(self.credential_id.len() as u16).to_be_bytes());
        auth_data.extend_from_slice(&self.credential_id);
        auth_data.extend_from_slice(&self.cose_key());
        let mut attestation = vec![0xa3];
        attestation.extend(text("fmt"));
        attestation.extend(text("none"));
        attestation.extend(text("attStmt"));
        attestation.push(0xa0);
        attestation.extend(text("authData"));
        attestation.extend(bytes(&auth_data));
        self.credential(json!({
            "clientDataJSON": B64.encode(client_data),
            "attestationObject": B64.encode(attestation),
            "transports": ["internal"],
        }))
    }

    /// Answers the site's request options from `origin`.
    pub fn sign_in(&mut self, options: &Value, origin: &str) -> String {
        let key = &options["publicKey"];
        let client_data = client_data("webauthn.get", key, origin);
        let rp_id = key["rpId"].as_str().expect("an RP id");
        let auth_data = self.auth_data(rp_id, 0);
        let mut signed = auth_data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data));
        let signature: Signature = self.key.sign(&signed);
        self.credential(json!({
            "clientDataJSON": B64.encode(&client_data),
            "authenticatorData": B64.encode(&auth_data),
            "signature": B64.encode(signature.to_der().as_bytes()),
            "userHandle": B64.encode(&self.user_handle),
        }))
    }

    /// The next answer repeats the last signature count, as a copy of this key would.
    pub fn reuse_counter(&mut self) {
        self.counter -= 1;
    }

    /// The RP id hash, the flags and the (next) signature count.
    fn auth_data(&mut self, rp_id: &str, extra_flags: u8) -> Vec<u8> {
        self.counter += 1;
        let mut data = Sha256::digest(rp_id.as_bytes()).to_vec();
        data.push(PRESENT_AND_VERIFIED | extra_flags);
        data.extend_from_slice(&self.counter.to_be_bytes());
        data
    }

    /// The public key as COSE: EC2 (1: 2), ES256 (3: -7), P-256 (-1: 1), x (-2) and y (-3).
    fn cose_key(&self) -> Vec<u8> {
        let point = self.key.verifying_key().to_sec1_point(false);
        let point = point.as_bytes();
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
        cose.extend(bytes(&point[1..33]));
        cose.push(0x22);
        cose.extend(bytes(&point[33..65]));
        cose
    }

    fn credential(&self, response: Value) -> String {
        let id = B64.encode(&self.credential_id);
        json!({ "id": id, "rawId": id, "type": "public-key", "response": response, "extensions": {} }).to_string()
    }
}

/// What the browser says it signed: the ceremony, the challenge as sent, and the page's origin.
fn client_data(kind: &str, options: &Value, origin: &str) -> Vec<u8> {
    let challenge = options["challenge"].as_str().expect("a challenge");
    json!({ "type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false }).to_string().into_bytes()
}

/// CBOR: a text string (shorter than 24 bytes, all this needs).
fn text(value: &str) -> Vec<u8> {
    assert!(value.len() < 24);
    let mut out = vec![0x60 | value.len() as u8];
    out.extend_from_slice(value.as_bytes());
    out
}

/// CBOR: a byte string.
fn bytes(value: &[u8]) -> Vec<u8> {
    let mut out = match value.len() {
        len if len < 24 => vec![0x40 | len as u8],
        len if len < 256 => vec![0x58, len as u8],
        len => {
            let mut head = vec![0x59];
            head.extend_from_slice(&(len as u16).to_be_bytes());
            head
        }
    };
    out.extend_from_slice(value);
    out
}

impl super::TestApp {
    /// The app on a free port reached as `http://localhost:PORT`: a domain, which passkeys need
    /// (an IP address cannot be a relying party). Returns the app and that origin. The origin must
    /// be known before the app binds, so the port is chosen first; another test may take it in
    /// between, and then the start is tried again on another.
    pub async fn spawn_for_passkeys(
        backend: super::Backend,
        adjust: impl Fn(&mut watasu::config::Settings),
    ) -> (Self, String) {
        const TRIES: usize = 5;
        for attempt in 1..=TRIES {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let origin = format!("http://localhost:{port}");
            let data_dir = tempfile::tempdir().unwrap();
            let database_url = super::fresh_database(backend, data_dir.path()).await;
            let started = Self::try_spawn_on(data_dir, &database_url, |s| {
                s.listen = format!("127.0.0.1:{port}").parse().unwrap();
                s.base_url = Some(format!("{origin}/").parse().unwrap());
                adjust(s);
            })
            .await;
            match started {
                Ok(app) => return (app, origin),
                Err(error) if attempt < TRIES && port_taken(&error) => continue,
                Err(error) => panic!("the app starts: {error:?}"),
            }
        }
        unreachable!("the last try answers")
    }
}

/// The app's listening port was taken by someone else.
fn port_taken(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse)
    })
}
