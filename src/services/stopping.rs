//! The server's stop, as an upload still arriving sees it. On SIGTERM requests in flight get the
//! shutdown grace; an upload that has not arrived by half of it is cut, so the other half is
//! left to remove what it stored and to answer the sender with a page (instead of a connection
//! reset when the grace ends).

use std::{
    io,
    pin::Pin,
    sync::Mutex,
    task::{Context, Poll},
    time::Duration,
};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// The share of the shutdown grace an arriving upload may still use (the rest is for the answer).
const UPLOAD_SHARE_OF_GRACE: u32 = 2;

/// Shared by every clone: the cut of arriving uploads, once the server stops.
#[derive(Clone, Debug, Default)]
pub struct Stopping {
    cut: CancellationToken,
}

impl Stopping {
    /// The server stops now and gives requests in flight `grace`: arriving uploads are cut at
    /// half of it.
    pub fn begin(&self, grace: Duration) {
        let cut = self.cut.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace / UPLOAD_SHARE_OF_GRACE).await;
            cut.cancel();
        });
    }

    /// True once arriving uploads are cut.
    pub fn has_cut(&self) -> bool {
        self.cut.is_cancelled()
    }

    /// `content` until the cut, after which reading it fails.
    pub fn cut_off<'a>(&self, content: Pin<Box<dyn AsyncRead + Send + 'a>>) -> Pin<Box<dyn AsyncRead + Send + 'a>> {
        let cut = self.cut.clone();
        Box::pin(CutOff { content, cut: Mutex::new(Box::pin(async move { cut.cancelled().await })) })
    }
}

struct CutOff<'a> {
    content: Pin<Box<dyn AsyncRead + Send + 'a>>,
    /// (In a mutex only to be `Sync`; it is only ever reached through `&mut self`.)
    cut: Mutex<BoxFuture<'static, ()>>,
}

impl AsyncRead for CutOff<'_> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let cut = this.cut.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        if cut.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::other("the server is stopping")));
        }
        this.content.as_mut().poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn an_upload_reads_until_half_the_grace_then_fails() {
        let stopping = Stopping::default();
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut content = stopping.cut_off(Box::pin(reader));
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"head").await.unwrap();
        let mut buf = [0u8; 4];
        content.read_exact(&mut buf).await.unwrap();
        assert!(!stopping.has_cut());
        stopping.begin(Duration::from_millis(100));
        // The sender goes quiet: the read waits, then fails at the cut.
        let error = content.read(&mut buf).await.unwrap_err();
        assert_eq!(error.to_string(), "the server is stopping");
        assert!(stopping.has_cut());
    }
}
