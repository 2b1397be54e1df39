//! The tus checksum extension: `Upload-Checksum: <algorithm> <base64 digest>` of one PATCH's
//! body. The digest is computed while the bytes stream to the store.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, ReadBuf};

/// What `Tus-Checksum-Algorithm` offers (the extension requires sha1).
pub const ALGORITHMS: &str = "sha1,sha256";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checksum {
    algorithm: Algorithm,
    expected: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algorithm {
    Sha1,
    Sha256,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    #[error("unsupported checksum algorithm")]
    Unsupported,
    #[error("malformed Upload-Checksum")]
    Malformed,
}

impl Checksum {
    pub fn parse(header: &str) -> Result<Self, ChecksumError> {
        let (name, digest) = header.trim().split_once(' ').ok_or(ChecksumError::Malformed)?;
        let algorithm = match name {
            "sha1" => Algorithm::Sha1,
            "sha256" => Algorithm::Sha256,
            _ => return Err(ChecksumError::Unsupported),
        };
        let expected = STANDARD.decode(digest.trim()).map_err(|_| ChecksumError::Malformed)?;
        Ok(Self { algorithm, expected })
    }

    /// A running digest of the body, to compare with [`Digester::matches`].
    pub fn digester(&self) -> Digester {
        let state = match self.algorithm {
            Algorithm::Sha1 => State::Sha1(Sha1::new()),
            Algorithm::Sha256 => State::Sha256(Sha256::new()),
        };
        Digester { state, expected: self.expected.clone() }
    }
}

pub struct Digester {
    state: State,
    expected: Vec<u8>,
}

enum State {
    Sha1(Sha1),
    Sha256(Sha256),
}

impl Digester {
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.state {
            State::Sha1(hasher) => hasher.update(bytes),
            State::Sha256(hasher) => hasher.update(bytes),
        }
    }

    /// Whether everything read through [`Digester::reader`] has the expected digest.
    pub fn matches(self) -> bool {
        let actual = match self.state {
            State::Sha1(hasher) => hasher.finalize().to_vec(),
            State::Sha256(hasher) => hasher.finalize().to_vec(),
        };
        actual == self.expected
    }

    /// `inner`, digesting each byte read through it.
    pub fn reader<'a>(&'a mut self, inner: Pin<Box<dyn AsyncRead + Send + 'a>>) -> DigestingReader<'a> {
        DigestingReader { inner, digester: self }
    }
}

pub struct DigestingReader<'a> {
    inner: Pin<Box<dyn AsyncRead + Send + 'a>>,
    digester: &'a mut Digester,
}

impl AsyncRead for DigestingReader<'_> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.inner.as_mut().poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let fresh = buf.filled()[before..].to_vec();
            self.digester.update(&fresh);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn a_digest_read_through_matches_only_the_right_checksum() {
        // sha1("hello") and sha256("hello"), base64.
        for (header, right) in [
            ("sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=", true),
            ("sha256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=", true),
            ("sha256 qvTGHdzF6KLavt4PO0gs2a6pQ00=", false),
        ] {
            let mut digester = Checksum::parse(header).unwrap().digester();
            let mut out = Vec::new();
            digester.reader(Box::pin(&b"hello"[..])).read_to_end(&mut out).await.unwrap();
            assert_eq!(digester.matches(), right, "{header}");
        }
    }

    #[test]
    fn unknown_algorithms_and_bad_digests_are_refused() {
        assert_eq!(Checksum::parse("md5 XUFAKrxLKna5cZ2REBfFkg=="), Err(ChecksumError::Unsupported));
        assert_eq!(Checksum::parse("sha1 !!"), Err(ChecksumError::Malformed));
        assert_eq!(Checksum::parse("sha1"), Err(ChecksumError::Malformed));
    }
}
