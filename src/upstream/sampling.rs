//! Which sampling parameters each upstream wire can carry. A run asking
//! for one its upstream cannot take is refused naming it, never sampled
//! without it; a parameter left at its neutral value (a penalty of 0, a
//! `topK` of 0, no `logitBias` entries) asks for nothing and passes.

use thinkwire_engine::SamplingParams;

use super::UpstreamKind;

/// A sampling parameter the upstream cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uncarried {
    /// Its `forwardedProps.sampling` key (`topK`).
    pub key: &'static str,
    /// Why, naming it as the sampler does (`top_k`).
    pub message: String,
}

impl UpstreamKind {
    /// The first parameter of `params` that this wire cannot carry;
    /// `thinking`: the run asks the upstream to think (Anthropic refuses
    /// `top_k` with extended thinking on).
    pub fn uncarried_sampling(self, params: &SamplingParams, thinking: bool) -> Option<Uncarried> {
        let asked = [
            ("topK", "top_k", params.top_k != 0),
            ("minP", "min_p", params.min_p != 0.0),
            (
                "repetitionPenalty",
                "repetition_penalty",
                params.repetition_penalty != 1.0,
            ),
            (
                "frequencyPenalty",
                "frequency_penalty",
                params.frequency_penalty != 0.0,
            ),
            (
                "presencePenalty",
                "presence_penalty",
                params.presence_penalty != 0.0,
            ),
            ("logitBias", "logit_bias", !params.logit_bias.is_empty()),
        ];
        let carried: &[&str] = match self {
            // vLLM, SGLang and mlx-lm take all of them; OpenAI itself
            // refuses the three extras with its own 400. Bias ids are the
            // upstream model's; it checks them against its vocabulary.
            Self::OpenAiChat => &[
                "topK",
                "minP",
                "repetitionPenalty",
                "frequencyPenalty",
                "presencePenalty",
                "logitBias",
            ],
            Self::OpenAiResponses => &[],
            Self::Anthropic if thinking => &[],
            Self::Anthropic => &["topK"],
        };
        let (key, name, _) = asked
            .into_iter()
            .find(|(key, _, on)| *on && !carried.contains(key))?;
        let when = if thinking && self == Self::Anthropic {
            " while it thinks"
        } else {
            ""
        };
        Some(Uncarried {
            key,
            message: format!(
                "sampling {name} cannot be passed to the {} upstream{when}",
                self.as_str()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(set: impl Fn(&mut SamplingParams)) -> SamplingParams {
        let mut params = SamplingParams {
            temperature: 0.7,
            top_p: 0.9,
            ..SamplingParams::greedy()
        };
        set(&mut params);
        params
    }

    #[test]
    fn neutral_values_pass_everywhere() {
        let params = asking(|p| {
            p.frequency_penalty = 0.0;
            p.top_k = 0;
        });
        for kind in [
            UpstreamKind::OpenAiChat,
            UpstreamKind::OpenAiResponses,
            UpstreamKind::Anthropic,
        ] {
            for thinking in [false, true] {
                assert_eq!(kind.uncarried_sampling(&params, thinking), None);
            }
        }
    }

    #[test]
    fn chat_completions_carries_all_of_them() {
        let params = asking(|p| {
            p.top_k = 40;
            p.min_p = 0.05;
            p.repetition_penalty = 1.1;
            p.frequency_penalty = 0.5;
            p.presence_penalty = 0.5;
            p.logit_bias = vec![(7, -100.0)];
        });
        assert_eq!(
            UpstreamKind::OpenAiChat.uncarried_sampling(&params, true),
            None
        );
    }

    #[test]
    fn only_chat_completions_carries_logit_bias() {
        let params = asking(|p| p.logit_bias = vec![(7, -100.0)]);
        for (kind, thinking) in [
            (UpstreamKind::OpenAiResponses, false),
            (UpstreamKind::Anthropic, false),
            (UpstreamKind::Anthropic, true),
        ] {
            let refused = kind.uncarried_sampling(&params, thinking).unwrap();
            assert_eq!(refused.key, "logitBias");
            assert!(
                refused.message.starts_with(&format!(
                    "sampling logit_bias cannot be passed to the {} upstream",
                    kind.as_str()
                )),
                "{refused:?}"
            );
        }
        // An empty bias asks for nothing.
        let params = asking(|p| p.logit_bias = Vec::new());
        assert_eq!(
            UpstreamKind::OpenAiResponses.uncarried_sampling(&params, false),
            None
        );
    }

    #[test]
    fn responses_carries_none_of_them() {
        let params = asking(|p| p.presence_penalty = -0.5);
        let refused = UpstreamKind::OpenAiResponses.uncarried_sampling(&params, false);
        assert_eq!(refused.map(|u| u.key), Some("presencePenalty"));
        let params = asking(|p| p.top_k = 5);
        let refused = UpstreamKind::OpenAiResponses
            .uncarried_sampling(&params, false)
            .unwrap();
        assert_eq!(refused.key, "topK");
        assert_eq!(
            refused.message,
            "sampling top_k cannot be passed to the openai-responses upstream"
        );
    }

    #[test]
    fn anthropic_carries_top_k_unless_thinking() {
        let params = asking(|p| p.top_k = 5);
        assert_eq!(
            UpstreamKind::Anthropic.uncarried_sampling(&params, false),
            None
        );
        let refused = UpstreamKind::Anthropic
            .uncarried_sampling(&params, true)
            .unwrap();
        assert_eq!(refused.key, "topK");
        assert!(refused.message.ends_with("while it thinks"), "{refused:?}");
        let params = asking(|p| p.frequency_penalty = 1.0);
        let refused = UpstreamKind::Anthropic.uncarried_sampling(&params, false);
        assert_eq!(refused.map(|u| u.key), Some("frequencyPenalty"));
    }
}
