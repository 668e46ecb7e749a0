//! The transport seam, and one call's sending under the endpoint retry
//! contract (what [`Model`](crate::Model) runs once it has admitted a call).

use std::future::Future;
use std::io::Read;
use std::time::Duration;

use providers_core::{
    BodySource, EndpointRetry, TransportFailure, call_with_retries_on, replayable_body,
};
use serde_json::Value;

use crate::error::Error;

/// Sends one HTTP request. No client is chosen here; the binary supplies
/// one.
pub trait Transport {
    /// POSTs a JSON body to `path`.
    fn post_json(
        &mut self,
        path: &str,
        body: &Value,
    ) -> impl Future<Output = Result<Value, TransportFailure>> + Send;

    /// POSTs a multipart upload: `file` is the file part's full content
    /// stream, `fields` the other form fields.
    fn post_file(
        &mut self,
        path: &str,
        fields: &Value,
        file: Box<dyn Read + Send>,
    ) -> impl Future<Output = Result<Value, TransportFailure>> + Send;
}

/// Waits between attempts.
pub trait Sleeper {
    /// Sleeps for `d`.
    fn sleep(&mut self, d: Duration) -> impl Future<Output = ()> + Send;
}

/// Sends a shaped chat completions body under the endpoint retry contract.
pub(crate) async fn send_chat<T: Transport, S: Sleeper>(
    transport: &mut T,
    sleeper: &mut S,
    retry: &EndpointRetry,
    body: &Value,
) -> Result<Value, Error> {
    Ok(call_with_retries_on(
        retry,
        (transport, sleeper),
        || Ok(()),
        move |(t, s), ()| async move {
            let result = t.post_json("/chat/completions", body).await;
            ((t, s), result)
        },
        pause,
    )
    .await?)
}

/// Waits out a backoff delay, handing the transport and sleeper back (the
/// state [`call_with_retries_on`] threads through the attempts, so no
/// closure lends them out and the call's future stays `Send`).
async fn pause<'a, T, S: Sleeper>(
    (t, s): (&'a mut T, &'a mut S),
    d: Duration,
) -> ((&'a mut T, &'a mut S), ()) {
    s.sleep(d).await;
    ((t, s), ())
}

/// The three upload endpoints. They share one replay implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadEndpoint {
    /// Groq audio transcription.
    GroqTranscription,
    /// OpenAI audio (transcriptions).
    OpenAiAudio,
    /// OpenAI image edits.
    OpenAiImages,
}

impl UploadEndpoint {
    /// Every upload endpoint.
    pub const ALL: [UploadEndpoint; 3] = [
        Self::GroqTranscription,
        Self::OpenAiAudio,
        Self::OpenAiImages,
    ];

    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Self::GroqTranscription => "/openai/v1/audio/transcriptions",
            Self::OpenAiAudio => "/audio/transcriptions",
            Self::OpenAiImages => "/images/edits",
        }
    }
}

/// Uploads a file under the retry contract. The body factory is built
/// once (a one-shot stream is refused before any I/O when a retry could
/// happen) and each attempt gets a fresh reader over the full content.
pub(crate) async fn send_upload<T: Transport, S: Sleeper>(
    endpoint: UploadEndpoint,
    transport: &mut T,
    sleeper: &mut S,
    retry: &EndpointRetry,
    fields: &Value,
    file: BodySource<'_>,
) -> Result<Value, Error> {
    let mut factory = replayable_body(file, retry.can_retry())?;
    Ok(call_with_retries_on(
        retry,
        (transport, sleeper),
        || factory.next_body(),
        move |(t, s), body| async move {
            let result = t.post_file(endpoint.path(), fields, body).await;
            ((t, s), result)
        },
        pause,
    )
    .await?)
}
