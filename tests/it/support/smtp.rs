//! An SMTP server in the test process that lettre really talks to: it answers the conversation and
//! keeps every message it receives. It can be switched off to play an outage.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    sync::Notify,
};
use watasu::i18n::Lang;

/// How long a code mail may take to arrive (the outbox delivers it in the background).
const CODE_WAIT: Duration = Duration::from_secs(20);

/// One received message: the envelope recipients and the raw data.
#[derive(Clone, Debug)]
pub struct ReceivedMail {
    pub to: Vec<String>,
    pub data: String,
}

impl ReceivedMail {
    /// The message's first text part, decoded (the app's own reader of .eml files).
    pub fn text(&self) -> String {
        watasu::mail::dev_outbox::parse(&self.data).text
    }

    /// The `Subject:` header, decoded.
    pub fn subject(&self) -> String {
        watasu::mail::dev_outbox::parse(&self.data).subject
    }

    /// The first run of exactly six digits in the text: the one-time code.
    pub fn code(&self) -> Option<String> {
        let text = self.text();
        let bytes = text.as_bytes();
        (0..bytes.len().saturating_sub(5)).find_map(|i| {
            let run = &bytes[i..i + 6];
            let bounded =
                (i == 0 || !bytes[i - 1].is_ascii_digit()) && bytes.get(i + 6).is_none_or(|b| !b.is_ascii_digit());
            (bounded && run.iter().all(u8::is_ascii_digit)).then(|| String::from_utf8_lossy(run).into_owned())
        })
    }
}

#[derive(Clone)]
pub struct SmtpSink {
    pub port: u16,
    messages: Arc<Mutex<Vec<ReceivedMail>>>,
    arrived: Arc<Notify>,
    refusing: Arc<std::sync::atomic::AtomicBool>,
    refused: Arc<std::sync::atomic::AtomicUsize>,
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
}

impl SmtpSink {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sink = Self {
            port: listener.local_addr().unwrap().port(),
            messages: Arc::default(),
            arrived: Arc::default(),
            refusing: Arc::default(),
            refused: Arc::default(),
            delay_ms: Arc::default(),
        };
        let accepting = sink.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let sink = accepting.clone();
                tokio::spawn(async move {
                    let _ = sink.converse(socket).await;
                });
            }
        });
        sink
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// While on, every transaction is refused with a temporary failure, like a relay that is down.
    pub fn set_refusing(&self, refusing: bool) {
        self.refusing.store(refusing, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many transactions were refused so far (each is one delivery attempt that failed).
    pub fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Makes every reply to DATA wait this long, like a slow relay.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms.store(delay.as_millis() as u64, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn messages(&self) -> Vec<ReceivedMail> {
        self.messages.lock().unwrap().clone()
    }

    /// Waits until at least `count` messages arrived, or panics after `timeout`.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.arrived.notified();
            let messages = self.messages();
            if messages.len() >= count {
                return messages;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("expected {count} mails, got {}", self.messages().len());
            }
        }
    }

    /// The one-time code of the first code mail to `address` (either language's subject), waiting
    /// for it; other mails (the share notification, a sender's receipt) are passed over.
    pub async fn code_for(&self, address: &str) -> String {
        self.code_for_after(address, 0).await
    }

    /// Like [`code_for`](Self::code_for), among the mails after the first `after` (count them
    /// with `messages().len()` before the step that sends the code).
    pub async fn code_for_after(&self, address: &str, after: usize) -> String {
        let subjects = [Lang::Ja.text().mail.code_subject, Lang::En.text().mail.code_subject];
        let deadline = tokio::time::Instant::now() + CODE_WAIT;
        loop {
            let notified = self.arrived.notified();
            let messages = self.messages();
            let code = messages
                .iter()
                .skip(after)
                .filter(|m| m.to == [address] && subjects.contains(&m.subject().as_str()))
                .find_map(ReceivedMail::code);
            if let Some(code) = code {
                return code;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let seen: Vec<_> = messages.iter().map(|m| (m.to.clone(), m.subject())).collect();
                panic!("no code mail to {address} within {CODE_WAIT:?}; mails: {seen:?}");
            }
        }
    }

    async fn converse(&self, socket: tokio::net::TcpStream) -> std::io::Result<()> {
        let (read, mut write) = socket.into_split();
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"220 sink ESMTP\r\n").await?;
        let mut to = Vec::new();
        while let Some(line) = lines.next_line().await? {
            let upper = line.to_ascii_uppercase();
            let reply: &[u8] = if upper.starts_with("EHLO") {
                b"250-sink\r\n250 8BITMIME\r\n"
            } else if upper.starts_with("HELO") || upper.starts_with("RSET") || upper.starts_with("NOOP") {
                b"250 ok\r\n"
            } else if upper.starts_with("MAIL FROM") {
                if self.refusing.load(std::sync::atomic::Ordering::SeqCst) {
                    self.refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    b"421 service not available\r\n"
                } else {
                    to.clear();
                    b"250 ok\r\n"
                }
            } else if upper.starts_with("RCPT TO") {
                to.push(line[8..].trim().trim_start_matches(':').trim().trim_matches(['<', '>']).to_owned());
                b"250 ok\r\n"
            } else if upper == "DATA" {
                write.write_all(b"354 go ahead\r\n").await?;
                let mut data = String::new();
                while let Some(line) = lines.next_line().await? {
                    if line == "." {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').filter(|_| line.starts_with("..")).unwrap_or(&line));
                    data.push_str("\r\n");
                }
                let delay = self.delay_ms.load(std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                self.messages.lock().unwrap().push(ReceivedMail { to: std::mem::take(&mut to), data });
                self.arrived.notify_waiters();
                b"250 queued\r\n"
            } else if upper == "QUIT" {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            } else {
                b"502 not implemented\r\n"
            };
            write.write_all(reply).await?;
        }
        Ok(())
    }
}
