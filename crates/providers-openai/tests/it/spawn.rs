//! A model call's future is `Send`: `Model::chat` and `Model::upload` run
//! under `tokio::spawn` on a multi-threaded runtime (a compile-time check),
//! and still follow the retry contract and the executor's budget there
//! (checked at run time).

use std::io::{Cursor, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Duration;

use providers_core::{Backoff, BodySource};
use providers_openai::{Model, ModelConfig, Sleeper, UploadEndpoint};
use serde_json::{Value, json};

use crate::{Fake, api_model, limited, status, user};

/// Runs `f` as a task on a two-worker runtime with timers, failing (not
/// hanging) if it has not finished at a generous deadline.
fn spawn_on_multi_thread<F>(f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(60), tokio::spawn(f))
                .await
                .expect("finished before the deadline")
                .expect("the task finished")
        })
}

/// Records the delays it is asked to wait and yields instead, so the task
/// may resume on another worker.
#[derive(Default)]
struct YieldSleep {
    slept: Vec<Duration>,
}

impl Sleeper for YieldSleep {
    async fn sleep(&mut self, d: Duration) {
        self.slept.push(d);
        tokio::task::yield_now().await;
    }
}

fn retrying(max_retries: u32) -> ModelConfig {
    ModelConfig {
        max_retries,
        ..ModelConfig::default()
    }
}

#[test]
fn a_chat_future_is_spawnable_and_retries_there() {
    let model = Arc::new(api_model("gpt-5", retrying(3)));
    let m = Arc::clone(&model);
    let (result, sent, slept) = spawn_on_multi_thread(async move {
        let mut t = Fake::new(vec![
            Err(status(503)),
            Err(status(429)),
            Ok(json!({"id": "c"})),
        ]);
        let mut s = YieldSleep::default();
        let r = m.chat(&mut t, &mut s, &user("x")).await;
        (r, t.sent_json, s.slept)
    });
    assert_eq!(result.unwrap(), json!({"id": "c"}));
    assert_eq!(sent.len(), 3, "two retries, then the answer");
    assert!(sent.iter().all(|b| b["model"] == "gpt-5"), "{sent:?}");
    let backoff = Backoff::default();
    assert_eq!(slept, [backoff.delay(1), backoff.delay(2)]);
    let stats = model.executor().stats();
    assert_eq!((stats.granted, stats.in_flight), (1, 0), "{stats:?}");
}

#[test]
fn an_upload_future_is_spawnable_and_replays_the_full_body() {
    let model = Arc::new(api_model("whisper-1", retrying(2)));
    let m = Arc::clone(&model);
    let (result, files) = spawn_on_multi_thread(async move {
        let mut stream = Cursor::new(b"XXhead+body".to_vec());
        stream.seek(SeekFrom::Start(2)).expect("seek");
        let mut t = Fake::new(vec![Err(status(500)), Ok(json!({"text": "ok"}))]);
        let r = m
            .upload(
                UploadEndpoint::OpenAiAudio,
                &mut t,
                &mut YieldSleep::default(),
                &json!({}),
                BodySource::Seekable(&mut stream),
            )
            .await;
        (r, t.sent_files)
    });
    assert_eq!(result.unwrap(), json!({"text": "ok"}));
    let path = UploadEndpoint::OpenAiAudio.path().to_owned();
    assert_eq!(
        files,
        [
            (path.clone(), b"head+body".to_vec()),
            (path, b"head+body".to_vec())
        ]
    );
}

#[test]
fn spawned_calls_share_the_budget_a_spawned_replenisher_refills() {
    // One request per tick: three spawned calls can only all finish if the
    // replenisher, another task, grants the deferred ones.
    let model = Arc::new(api_model("gpt-5", limited(1)));
    let m = Arc::clone(&model);
    let results: Vec<Result<Value, providers_openai::Error>> = spawn_on_multi_thread(async move {
        let refill = tokio::spawn(
            m.executor()
                .replenisher(Duration::from_millis(5), tokio::time::sleep),
        );
        let calls: Vec<_> = (0..3)
            .map(|i| {
                let m: Arc<Model> = Arc::clone(&m);
                tokio::spawn(async move {
                    let mut t = Fake::new(vec![Ok(json!({ "n": i }))]);
                    m.chat(&mut t, &mut YieldSleep::default(), &user("x")).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for c in calls {
            results.push(c.await.expect("call task finished"));
        }
        m.close();
        refill.await.expect("the replenisher ended at close");
        results
    });
    let answers: Vec<Value> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(answers, [json!({"n": 0}), json!({"n": 1}), json!({"n": 2})]);
    let stats = model.executor().stats();
    assert_eq!(stats.granted, 3, "{stats:?}");
    assert!(stats.ticks >= 2, "two calls waited for a tick: {stats:?}");
    assert_eq!((stats.in_flight, stats.replenishers), (0, 0), "{stats:?}");
}
