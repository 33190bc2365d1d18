//! Raw completions on the default model: the engine's own greedy
//! continuation, and an echoed prompt scored as the engine generated it.

use super::support;
use super::{agent, server};

/// A raw completion on the default model is the engine's own greedy
/// continuation of the tokenizer's encoding of the prompt, no template
/// around it; its log-probabilities are the model's (greedy: each token
/// the most likely of its alternatives).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_completion_is_the_engines_continuation_on_the_default_model() {
    let server = server(false).await;
    let prompt = "The capital of France is";
    let body =
        serde_json::json!({"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 3});
    let (status, whole) = support::post_json(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];

    let model = agent();
    let model = model.model().unwrap();
    let ids = model.encode_raw(prompt).unwrap();
    let request = thinkwire_engine::GenerationRequest {
        prompt: ids.clone(),
        max_tokens: 8,
        sampling: thinkwire_engine::SamplingParams::greedy(),
        stop_token_ids: model.stop_token_ids().to_vec(),
        logprobs: None,
    };
    struct Ids(Vec<u32>);
    impl thinkwire_engine::TokenSink for Ids {
        fn on_token(&mut self, id: u32) -> thinkwire_engine::Directive {
            self.0.push(id);
            thinkwire_engine::Directive::Continue
        }
    }
    let mut sink = Ids(Vec::new());
    model.engine().generate(&request, &mut sink).unwrap();
    assert_eq!(choice["text"], model.decode(&sink.0).unwrap(), "{whole}");
    assert_eq!(whole["usage"]["prompt_tokens"], ids.len(), "{whole}");
    let logprobs = &choice["logprobs"];
    for (i, lp) in logprobs["token_logprobs"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let lp = lp.as_f64().unwrap();
        let top = logprobs["top_logprobs"][i].as_object().unwrap();
        let best = top
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert!(
            lp <= 0.0 && (lp - best).abs() < 1e-4,
            "{i}: {lp} vs {top:?}"
        );
    }
    server.shutdown().await;
}

/// `echo` with `logprobs` scores the prompt on the default model: each of
/// its tokens after the first (`null`) has the log-probability the engine
/// gave it when it generated that token, and greedy tokens are the most
/// likely of their alternatives. The prompt is long enough that the
/// continuation is scored in a later pass than its start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_prompt_is_scored_as_the_engine_generated_it() {
    let server = server(false).await;
    let agent = agent();
    let model = agent.model().unwrap();
    let text = "Paris is in France. Rome is in Italy. ".repeat(16) + "Madrid is in";
    let ids = model.encode_raw(&text).unwrap();
    assert!(ids.len() > 130, "{} tokens", ids.len());
    struct Logged(Vec<u32>, Vec<thinkwire_engine::TokenLogprobs>);
    impl thinkwire_engine::TokenSink for Logged {
        fn on_token(&mut self, id: u32) -> thinkwire_engine::Directive {
            self.0.push(id);
            thinkwire_engine::Directive::Continue
        }
        fn on_logprobs(&mut self, logprobs: thinkwire_engine::TokenLogprobs) {
            self.1.push(logprobs);
        }
    }
    let request = thinkwire_engine::GenerationRequest {
        prompt: ids.clone(),
        max_tokens: 6,
        sampling: thinkwire_engine::SamplingParams::greedy(),
        stop_token_ids: model.stop_token_ids().to_vec(),
        logprobs: Some(2),
    };
    let mut sink = Logged(Vec::new(), Vec::new());
    model.engine().generate(&request, &mut sink).unwrap();
    assert!(!sink.0.is_empty() && sink.1.len() == sink.0.len());
    let whole: Vec<u32> = ids.iter().chain(&sink.0).copied().collect();

    let scored_before = scored_positions(&server).await;
    let body = serde_json::json!({"prompt": whole, "echo": true, "logprobs": 2,
        "max_tokens": 1, "temperature": 0});
    let (status, answer) = support::post_json(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{answer}");
    let choice = &answer["choices"][0];
    let logprobs = &choice["logprobs"];
    let listed = logprobs["token_logprobs"].as_array().unwrap();
    // The prompt's tokens, then the one generated.
    assert_eq!(listed.len(), whole.len() + 1, "{answer}");
    assert!(
        listed[0].is_null() && logprobs["top_logprobs"][0].is_null(),
        "{answer}"
    );
    assert_eq!(logprobs["text_offset"][0], 0, "{answer}");
    let text = choice["text"].as_str().unwrap();
    assert!(text.starts_with(&model.decode(&whole).unwrap()), "{answer}");
    for (i, generated) in sink.1.iter().enumerate() {
        let at = ids.len() + i;
        let scored = listed[at].as_f64().unwrap();
        assert!(
            (scored - f64::from(generated.logprob)).abs() < 0.02,
            "token {at}: scored {scored}, generated with {}",
            generated.logprob
        );
        let top = logprobs["top_logprobs"][at].as_object().unwrap();
        let best = top
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::MIN, f64::max);
        assert!(
            (scored - best).abs() < 1e-4,
            "token {at}: {scored} vs {top:?}"
        );
    }

    // With no tokens asked (`max_tokens: 0`), the prompt alone, scored
    // the same.
    let body = serde_json::json!({"prompt": whole, "echo": true, "logprobs": 2,
        "max_tokens": 0});
    let (status, alone) = support::post_json(&server, "/v1/completions", &body).await;
    assert_eq!(status, 200, "{alone}");
    let choice = &alone["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{alone}");
    assert_eq!(choice["text"], model.decode(&whole).unwrap(), "{alone}");
    let only = choice["logprobs"]["token_logprobs"].as_array().unwrap();
    assert_eq!(only[..], listed[..whole.len()], "{alone}");
    assert_eq!(alone["usage"]["completion_tokens"], 0, "{alone}");

    // Both scorings are counted where an operator looks, each prompt
    // position once.
    assert_eq!(
        scored_positions(&server).await - scored_before,
        2 * whole.len()
    );
    server.shutdown().await;
}

/// The server's count of prompt positions computed for their scores.
async fn scored_positions(server: &support::TestServer) -> usize {
    let metrics = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    (metrics.lines())
        .find_map(|l| l.strip_prefix("thinkwire_engine_scored_prompt_tokens_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no scored prompt tokens in\n{metrics}"))
}
