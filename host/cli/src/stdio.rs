//! The process's standard input and output for `serve`, read and written on the runtime.
//!
//! `tokio::io::stdin` and `stdout` hand every read and write to a blocking-pool thread,
//! so each message in or out costs two thread wake-ups; on a small VM those wake-ups,
//! not the work, were most of a call's latency through the gateway. An MCP client
//! starts its server with pipes (or, like Node, with socket pairs), and both can be
//! polled: such a stream is duplicated, made non-blocking and registered with the
//! runtime's reactor, so a message is read and answered by the worker that handles it.
//! Anything else (a regular file, a terminal) keeps tokio's blocking streams.
//!
//! The duplicate shares the open file with descriptor 0 or 1, so it is non-blocking for
//! the whole process; nothing else in `serve` reads stdin or writes stdout, and the
//! read and write ends of a pipe are separate files, so the client's end is untouched.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// Standard input, polled by the reactor when it is a pipe or a socket.
pub fn input() -> Box<dyn AsyncRead + Unpin + Send> {
    match polled(std::io::stdin().as_fd()) {
        Some(Polled::Pipe(file)) => match pipe::Receiver::from_file(file) {
            Ok(pipe) => Box::new(pipe),
            Err(e) => blocking("stdin", &e, tokio::io::stdin()),
        },
        Some(Polled::Socket(stream)) => Box::new(stream),
        None => Box::new(tokio::io::stdin()),
    }
}

/// Standard output, polled by the reactor when it is a pipe or a socket.
pub fn output() -> Box<dyn AsyncWrite + Unpin + Send> {
    match polled(std::io::stdout().as_fd()) {
        Some(Polled::Pipe(file)) => match pipe::Sender::from_file(file) {
            Ok(pipe) => Box::new(pipe),
            Err(e) => blocking("stdout", &e, tokio::io::stdout()),
        },
        Some(Polled::Socket(stream)) => Box::new(stream),
        None => Box::new(tokio::io::stdout()),
    }
}

/// tokio's blocking stream, when a pipe could not be registered.
fn blocking<S>(which: &str, error: &std::io::Error, stream: S) -> Box<S> {
    tracing::debug!(%error, "{which}: pipe not pollable; using tokio's blocking stream");
    Box::new(stream)
}

enum Polled {
    Pipe(File),
    Socket(tokio::net::UnixStream),
}

/// A duplicate of the standard stream `fd`, if the reactor can poll what it is.
fn polled(fd: BorrowedFd<'_>) -> Option<Polled> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        return Some(Polled::Pipe(file));
    }
    if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        return tokio::net::UnixStream::from_std(socket).ok().map(Polled::Socket);
    }
    None
}
