//! `thinkwire bench`'s sampling flags: greedy by default, or draws at a
//! temperature with top-p, top-k, min-p and a seed, which mlx-lm's
//! reference runs take too (`make_sampler`).

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
}

impl SamplingArgs {
    /// The sampling the flags ask for, validated.
    pub fn params(&self) -> Result<thinkwire_engine::SamplingParams> {
        let params = thinkwire_engine::SamplingParams {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
            min_p: self.min_p,
            seed: Some(self.seed),
            ..thinkwire_engine::SamplingParams::greedy()
        };
        params.validate()?;
        Ok(params)
    }

    /// The sampling in words (drawn where `sample_on` says), for the
    /// header and the JSON.
    pub fn note(&self, sample_on: &str) -> String {
        if self.temperature == 0.0 {
            return "greedy".into();
        }
        let mut note = format!("sampled on {sample_on}: temperature {}", self.temperature);
        for (name, on, value) in [
            ("top-p", self.top_p < 1.0, self.top_p.to_string()),
            ("top-k", self.top_k > 0, self.top_k.to_string()),
            ("min-p", self.min_p > 0.0, self.min_p.to_string()),
        ] {
            if on {
                note.push_str(&format!(" {name} {value}"));
            }
        }
        note + &format!(" seed {}", self.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::SamplingArgs;

    fn args(temperature: f32, top_p: f32) -> SamplingArgs {
        SamplingArgs {
            temperature,
            top_p,
            top_k: 0,
            min_p: 0.0,
            seed: 4,
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
    }
}
