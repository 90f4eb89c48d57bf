//! What the gateway's own HTTP requests share (the `http` feature): an answer's body
//! read within a bound.

use bytes::Bytes;
use reqwest::Response;
use reqwest::header::CONTENT_LENGTH;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// It is (or says it is) larger than the bound: nothing more is read.
    #[error("the body is larger than {limit} bytes")]
    TooLarge {
        /// The bound.
        limit: usize,
    },
    /// Reading it failed.
    #[error("reading the body failed")]
    Read(#[source] reqwest::Error),
}

/// Reads `response`'s body, at most `limit` bytes: a larger declared length is refused
/// before anything is read, and a body that grows past the bound is dropped there.
///
/// # Errors
///
/// [`BodyError::TooLarge`] past the bound, [`BodyError::Read`] when the connection fails.
pub async fn read_bounded(response: &mut Response, limit: usize) -> Result<Bytes, BodyError> {
    let declared = response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}
