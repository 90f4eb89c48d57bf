//! Copying between a server's connection and the host it reached, until both close or
//! the server is gone, counting the bytes each way.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Each direction's buffer: a bulk transfer moves in reads and writes this large (tokio's
/// default, 8 KiB, costs a bulk transfer half its throughput in system calls).
const BUFFER: usize = 64 * 1024;

/// Copies both ways between the server's `stream` and `upstream` until both ends have
/// closed, or until `alive` says the server is gone (its sender dropped: a host that
/// keeps an idle connection open would otherwise hold it, its task and its descriptors
/// for ever); the bytes from the server and to it, however it ended.
pub(crate) async fn splice(
    stream: &mut TcpStream,
    upstream: &mut TcpStream,
    alive: &mut watch::Receiver<()>,
) -> (u64, u64) {
    let (read, written) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut counted = Counted { inner: stream, read: &read, written: &written };
    tokio::select! {
        _ = tokio::io::copy_bidirectional_with_sizes(&mut counted, upstream, BUFFER, BUFFER) => {}
        _ = alive.changed() => {}
    }
    (read.load(Ordering::Relaxed), written.load(Ordering::Relaxed))
}

/// A stream that counts what is read from it and written to it.
struct Counted<'a> {
    inner: &'a mut TcpStream,
    read: &'a AtomicU64,
    written: &'a AtomicU64,
}

impl AsyncRead for Counted<'_> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut *this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            this.read.fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted<'_> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut *this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            this.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    use super::*;

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        (near, listener.accept().await.unwrap().0)
    }

    #[tokio::test]
    async fn a_splice_counts_both_ways_and_ends_when_the_server_is_gone_however_idle_the_host() {
        let (mut server, mut ours) = pair().await;
        let (mut upstream, mut host) = pair().await;
        let (alive, mut watching) = watch::channel(());
        let spliced = tokio::spawn(async move { splice(&mut ours, &mut upstream, &mut watching).await });
        server.write_all(b"ping!").await.unwrap();
        let mut ping = [0u8; 5];
        host.read_exact(&mut ping).await.unwrap();
        host.write_all(b"pong").await.unwrap();
        let mut pong = [0u8; 4];
        server.read_exact(&mut pong).await.unwrap();
        // The server closes; the host keeps its end open and says nothing.
        drop(server);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!spliced.is_finished(), "half open: the host may still answer");
        drop(alive);
        assert_eq!(spliced.await.unwrap(), (5, 4));
    }
}
