//! A clamd client for the one command watasu needs, `INSTREAM`: `zINSTREAM\0`, then the bytes as
//! chunks each led by its length (4 bytes, big-endian), then a zero length; clamd answers one
//! line ending in `\0`. Written here in a few lines rather than taken from a crate: it is that
//! small, needs no dependency, and reads the store's own tokio stream with flat memory.

use std::{io, path::PathBuf, str::FromStr, time::Duration};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes sent to clamd per chunk: memory stays at one chunk whatever the file's size.
const CHUNK: usize = 64 * 1024;
/// The longest answer clamd gives to INSTREAM (a signature name is short).
const MAX_ANSWER: u64 = 4096;

/// Where clamd listens: `tcp://host:port`, or the path of its Unix socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClamdAddress {
    Tcp(String),
    Unix(PathBuf),
}

impl FromStr for ClamdAddress {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if let Some(host_port) = value.strip_prefix("tcp://") {
            let (host, port) = host_port.rsplit_once(':').ok_or("tcp://HOST:PORT needs a port")?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(format!("{value:?} is not tcp://HOST:PORT"));
            }
            return Ok(Self::Tcp(host_port.to_owned()));
        }
        let path = value.strip_prefix("unix://").unwrap_or(value);
        if !path.starts_with('/') {
            return Err(format!("{value:?} is neither tcp://HOST:PORT nor the absolute path of a Unix socket"));
        }
        Ok(Self::Unix(PathBuf::from(path)))
    }
}

/// What clamd found in a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Clean,
    /// The name of the signature that matched.
    Infected(String),
    /// Longer than clamd's `StreamMaxLength`: not scanned.
    TooLarge,
}

/// Why clamd gave no verdict: the file stays held and is tried again.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("clamd could not be reached")]
    Connect(#[source] io::Error),
    #[error("clamd did not answer in time")]
    Timeout,
    #[error("the conversation with clamd failed")]
    Io(#[source] io::Error),
    #[error("reading the stored file failed")]
    Store(#[source] io::Error),
    #[error("clamd answered {0:?}")]
    Answer(String),
}

impl ScanError {
    /// A short class kept with the file while it waits: never file contents or clamd's text.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Connect(_) => "clamd_unreachable",
            Self::Timeout => "clamd_timeout",
            Self::Io(_) => "clamd_io",
            Self::Store(_) => "store_read",
            Self::Answer(_) => "clamd_error",
        }
    }
}

/// Reads clamd's answer to INSTREAM (without its `\0`).
pub fn parse_answer(answer: &str) -> Result<Verdict, ScanError> {
    let answer = answer.trim_end_matches(['\0', '\n']).trim();
    if answer.starts_with("INSTREAM size limit exceeded") {
        return Ok(Verdict::TooLarge);
    }
    let Some(result) = answer.strip_prefix("stream: ") else { return Err(ScanError::Answer(answer.to_owned())) };
    if result == "OK" {
        return Ok(Verdict::Clean);
    }
    match result.strip_suffix(" FOUND") {
        Some(name) if !name.is_empty() => Ok(Verdict::Infected(name.to_owned())),
        _ => Err(ScanError::Answer(answer.to_owned())),
    }
}

/// One clamd, reached anew for each scan; every step must progress within `timeout`.
#[derive(Clone, Debug)]
pub struct Clamd {
    address: ClamdAddress,
    timeout: Duration,
}

impl Clamd {
    pub fn new(address: ClamdAddress, timeout: Duration) -> Self {
        Self { address, timeout }
    }

    /// Streams `content` to clamd and reads its verdict.
    pub async fn scan(&self, content: impl AsyncRead + Unpin) -> Result<Verdict, ScanError> {
        match &self.address {
            ClamdAddress::Tcp(host_port) => {
                let stream = self.step(tokio::net::TcpStream::connect(host_port)).await.map_err(connect)?;
                self.instream(stream, content).await
            }
            ClamdAddress::Unix(path) => {
                let stream = self.step(tokio::net::UnixStream::connect(path)).await.map_err(connect)?;
                self.instream(stream, content).await
            }
        }
    }

    async fn instream(
        &self,
        mut clamd: impl AsyncRead + AsyncWrite + Unpin,
        mut content: impl AsyncRead + Unpin,
    ) -> Result<Verdict, ScanError> {
        let sent = self.send(&mut clamd, &mut content).await;
        // clamd answers and closes as soon as a stream passes StreamMaxLength, so a write that
        // failed may still have an answer behind it.
        match (sent, self.answer(&mut clamd).await) {
            (Err(ScanError::Store(error)), _) => Err(ScanError::Store(error)),
            (_, Ok(verdict)) => Ok(verdict),
            (Err(error), Err(_)) | (Ok(()), Err(error)) => Err(error),
        }
    }

    async fn send(
        &self,
        clamd: &mut (impl AsyncWrite + Unpin),
        content: &mut (impl AsyncRead + Unpin),
    ) -> Result<(), ScanError> {
        self.step(clamd.write_all(b"zINSTREAM\0")).await.map_err(io_error)?;
        let mut buffer = vec![0; CHUNK];
        loop {
            let read = content.read(&mut buffer).await.map_err(ScanError::Store)?;
            let length = u32::try_from(read).expect("a chunk is far below 4 GiB");
            self.step(clamd.write_all(&length.to_be_bytes())).await.map_err(io_error)?;
            if read == 0 {
                break;
            }
            self.step(clamd.write_all(&buffer[..read])).await.map_err(io_error)?;
        }
        self.step(clamd.flush()).await.map_err(io_error)
    }

    async fn answer(&self, clamd: &mut (impl AsyncRead + Unpin)) -> Result<Verdict, ScanError> {
        let mut answer = Vec::new();
        self.step(clamd.take(MAX_ANSWER).read_to_end(&mut answer)).await.map_err(io_error)?;
        if answer.is_empty() {
            return Err(ScanError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        parse_answer(&String::from_utf8_lossy(&answer))
    }

    /// One step of the conversation, within the timeout.
    async fn step<T>(&self, step: impl Future<Output = io::Result<T>>) -> io::Result<T> {
        tokio::time::timeout(self.timeout, step).await.map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
    }
}

fn connect(error: io::Error) -> ScanError {
    match error.kind() {
        io::ErrorKind::TimedOut => ScanError::Timeout,
        _ => ScanError::Connect(error),
    }
}

fn io_error(error: io::Error) -> ScanError {
    match error.kind() {
        io::ErrorKind::TimedOut => ScanError::Timeout,
        _ => ScanError::Io(error),
    }
}

#[cfg(test)]
mod tests {
    use super::{ClamdAddress, ScanError, Verdict, parse_answer};

    #[test]
    fn a_clean_stream_reads_ok() {
        assert_eq!(parse_answer("stream: OK\0").unwrap(), Verdict::Clean);
    }

    #[test]
    fn a_match_names_its_signature() {
        let verdict = parse_answer("stream: Eicar-Test-Signature.UNOFFICIAL FOUND\0").unwrap();
        assert_eq!(verdict, Verdict::Infected("Eicar-Test-Signature.UNOFFICIAL".to_owned()));
    }

    #[test]
    fn a_stream_over_the_limit_is_too_large() {
        assert_eq!(parse_answer("INSTREAM size limit exceeded. ERROR\0").unwrap(), Verdict::TooLarge);
    }

    #[test]
    fn any_other_answer_is_an_error_not_a_verdict() {
        for answer in ["stream: Can't allocate memory ERROR\0", "UNKNOWN COMMAND\0", "stream: FOUND\0", ""] {
            assert!(matches!(parse_answer(answer), Err(ScanError::Answer(_))), "{answer:?}");
        }
    }

    #[test]
    fn an_address_is_tcp_with_a_port_or_an_absolute_socket_path() {
        assert_eq!("tcp://127.0.0.1:3310".parse(), Ok(ClamdAddress::Tcp("127.0.0.1:3310".to_owned())));
        assert_eq!("/run/clamav/clamd.ctl".parse(), Ok(ClamdAddress::Unix("/run/clamav/clamd.ctl".into())));
        assert_eq!("unix:///run/c.ctl".parse(), Ok(ClamdAddress::Unix("/run/c.ctl".into())));
        for wrong in ["tcp://localhost", "tcp://:3310", "tcp://h:port", "clamd.ctl", "http://h:1"] {
            assert!(wrong.parse::<ClamdAddress>().is_err(), "{wrong}");
        }
    }
}
