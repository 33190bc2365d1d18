//! `thinkwire bench`'s sampling flags: greedy by default, or draws at a
//! temperature with top-p, top-k, min-p and a seed, which mlx-lm's
//! reference runs take too (`make_sampler`); and penalties on seen tokens,
//! the repetition penalty in mlx-lm's runs too (`make_logits_processors`).

#[cfg(feature = "mlx")]
use anyhow::Result;

/// How `thinkwire bench` picks tokens.
#[derive(clap::Args, Debug)]
pub struct SamplingArgs {
    /// Sampling temperature (0: greedy, the default); mlx-lm samples with
    /// the same settings (`make_sampler`).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Top-p when sampling (1: off).
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    /// Top-k when sampling (0: off).
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    /// Min-p when sampling (0: off).
    #[arg(long, default_value_t = 0.0)]
    min_p: f32,
    /// Seed of the draws (generation `i` of a concurrency level takes
    /// seed + i).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Repetition penalty over the last 64 tokens (1: off), greedy or
    /// sampled; mlx-lm's runs take it too.
    #[arg(long, default_value_t = 1.0)]
    repetition_penalty: f32,
    /// Frequency penalty over the generated tokens (0: off); thinkwire
    /// only (mlx-lm's counts the prompt too, over a window).
    #[arg(long, default_value_t = 0.0)]
    frequency_penalty: f32,
    /// Presence penalty over the generated tokens (0: off); thinkwire only.
    #[arg(long, default_value_t = 0.0)]
    presence_penalty: f32,
}

#[cfg(feature = "mlx")]
impl SamplingArgs {
    /// The sampling the flags ask for, validated.
    pub fn params(&self) -> Result<thinkwire_engine::SamplingParams> {
        let params = thinkwire_engine::SamplingParams {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
            min_p: self.min_p,
            seed: Some(self.seed),
            repetition_penalty: self.repetition_penalty,
            frequency_penalty: self.frequency_penalty,
            presence_penalty: self.presence_penalty,
            ..thinkwire_engine::SamplingParams::greedy()
        };
        params.validate()?;
        Ok(params)
    }

    /// The sampling in words (drawn where `sample_on` says), for the
    /// header and the JSON.
    pub fn note(&self, sample_on: &str) -> String {
        let sampled = self.temperature >= thinkwire_engine::GREEDY_BELOW;
        let mut note = if sampled {
            format!("sampled on {sample_on}: temperature {}", self.temperature)
        } else {
            "greedy".to_owned()
        };
        for (name, on, value) in [
            ("top-p", sampled && self.top_p < 1.0, self.top_p),
            ("top-k", sampled && self.top_k > 0, self.top_k as f32),
            ("min-p", sampled && self.min_p > 0.0, self.min_p),
            (
                "repetition penalty",
                self.repetition_penalty != 1.0,
                self.repetition_penalty,
            ),
            (
                "frequency penalty",
                self.frequency_penalty != 0.0,
                self.frequency_penalty,
            ),
            (
                "presence penalty",
                self.presence_penalty != 0.0,
                self.presence_penalty,
            ),
        ] {
            if on {
                note.push_str(&format!(" {name} {value}"));
            }
        }
        if sampled {
            note.push_str(&format!(" seed {}", self.seed));
        }
        note
    }

    /// Whether mlx-lm can run what the flags ask for: its frequency and
    /// presence penalties count over a window of the prompt too.
    pub fn mlx_lm_comparable(&self) -> bool {
        self.frequency_penalty == 0.0 && self.presence_penalty == 0.0
    }
}

#[cfg(all(test, feature = "mlx"))]
mod tests {
    use super::SamplingArgs;

    fn args(temperature: f32, top_p: f32) -> SamplingArgs {
        SamplingArgs {
            temperature,
            top_p,
            top_k: 0,
            min_p: 0.0,
            seed: 4,
            repetition_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
        }
    }

    #[test]
    fn names_the_sampling_and_refuses_a_bad_value() {
        assert_eq!(args(0.0, 1.0).note("auto"), "greedy");
        assert_eq!(
            args(0.7, 0.95).note("host"),
            "sampled on host: temperature 0.7 top-p 0.95 seed 4"
        );
        let err = args(0.7, 0.0).params().unwrap_err().to_string();
        assert!(err.contains("top_p"), "{err}");
        let penalized = SamplingArgs {
            repetition_penalty: 1.1,
            frequency_penalty: 0.5,
            ..args(0.0, 1.0)
        };
        assert_eq!(
            penalized.note("auto"),
            "greedy repetition penalty 1.1 frequency penalty 0.5"
        );
        assert!(!penalized.mlx_lm_comparable());
        let err = SamplingArgs {
            presence_penalty: 3.0,
            ..args(0.0, 1.0)
        }
        .params()
        .unwrap_err()
        .to_string();
        assert!(err.contains("presence_penalty"), "{err}");
    }
}
