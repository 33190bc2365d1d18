//! mlx-lm as the reference: `scripts/golden/mlx_lm_ref.py` run in the
//! venv `scripts/setup-mlx` made, on the same weights and prompts, from the
//! bench's own process so both see the same machine state.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{BenchOptions, BenchReport, ConcurrencyRow, StepOperations};
use crate::{EngineError, SamplingParams};

/// mlx-lm's continuous batching on the same figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MlxLmBatchReport {
    /// One row per concurrency.
    pub rows: Vec<ConcurrencyRow>,
}

/// Where mlx-lm and the reference script live.
#[derive(Debug, Clone)]
pub struct MlxLmReference {
    /// The venv's Python (`$THINKWIRE_HOME/venv/bin/python`).
    pub python: PathBuf,
    /// `scripts/golden/mlx_lm_ref.py`.
    pub script: PathBuf,
    /// A BLAS library to preload into mlx-lm's process (`LD_PRELOAD`), e.g.
    /// the plain system OpenBLAS: its `cblas_sgemm` then takes precedence
    /// over thinkwire's gemv forwarding layer that the venv shares
    /// (`THINKWIRE_MLX_LM_PRELOAD`). `None` compares on the same BLAS.
    pub preload: Option<PathBuf>,
}

impl MlxLmReference {
    /// The defaults `scripts/setup-mlx` installs; `THINKWIRE_MLX_LM_PYTHON`
    /// and `THINKWIRE_MLX_LM_SCRIPT` override them.
    pub fn locate() -> Self {
        let home = std::env::var_os("THINKWIRE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/thinkwire")))
            .unwrap_or_else(|| PathBuf::from(".cache/thinkwire"));
        let python = std::env::var_os("THINKWIRE_MLX_LM_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("venv/bin/python"));
        let script = std::env::var_os("THINKWIRE_MLX_LM_SCRIPT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/golden/mlx_lm_ref.py")
            });
        let preload = std::env::var_os("THINKWIRE_MLX_LM_PRELOAD")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self {
            python,
            script,
            preload,
        }
    }

    /// Runs mlx-lm on the folder `model_dir` (e.g. written by
    /// [`crate::mlx::convert_gguf`]) with the same prompt and token count.
    pub fn bench(
        &self,
        model_dir: &Path,
        options: &BenchOptions,
    ) -> Result<BenchReport, EngineError> {
        let ids: Vec<String> = options.prompt.iter().map(u32::to_string).collect();
        let mut cmd = self.command("bench", model_dir);
        cmd.arg("--prompt-ids")
            .arg("-")
            .arg("--max-tokens")
            .arg(options.max_tokens.to_string())
            .arg("--runs")
            .arg(options.runs.max(1).to_string())
            .args(sampling_args(&options.sampling));
        self.run_json(cmd, ids.join(","))
    }

    /// Runs mlx-lm's `BatchGenerator` on `model_dir` at each concurrency,
    /// the best of `runs` rounds in which the levels take turns
    /// (`mlx_lm_ref.py bench-batch`).
    pub fn bench_batch(
        &self,
        model_dir: &Path,
        prompts: &[Vec<u32>],
        max_tokens: usize,
        levels: &[usize],
        runs: usize,
        sampling: &SamplingParams,
    ) -> Result<MlxLmBatchReport, EngineError> {
        let ids: Vec<String> = prompts
            .iter()
            .map(|p| p.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .collect();
        let levels: Vec<String> = levels.iter().map(usize::to_string).collect();
        let mut cmd = self.command("bench-batch", model_dir);
        cmd.arg("--prompts-ids")
            .arg("-")
            .arg("--concurrency")
            .arg(levels.join(","))
            .arg("--max-tokens")
            .arg(max_tokens.to_string())
            .arg("--runs")
            .arg(runs.max(1).to_string())
            .args(sampling_args(sampling));
        self.run_json(cmd, ids.join(";"))
    }

    /// mlx-lm's decode step on `model_dir`, counted as
    /// [`super::decode_step_operations_of`] counts ours (`mlx_lm_ref.py ops`).
    pub fn operations(
        &self,
        model_dir: &Path,
        batches: &[usize],
    ) -> Result<Vec<StepOperations>, EngineError> {
        #[derive(serde::Deserialize)]
        struct Report {
            rows: Vec<StepOperations>,
        }
        let batches: Vec<String> = batches.iter().map(usize::to_string).collect();
        let mut cmd = self.command("ops", model_dir);
        cmd.arg("--batches").arg(batches.join(","));
        Ok(self.run_json::<Report>(cmd, String::new())?.rows)
    }

    /// `python mlx_lm_ref.py SUBCOMMAND MODEL_DIR`, with the preload.
    fn command(&self, subcommand: &str, model_dir: &Path) -> Command {
        let mut cmd = Command::new(&self.python);
        if let Some(lib) = &self.preload {
            cmd.env("LD_PRELOAD", lib);
        }
        cmd.arg(&self.script).arg(subcommand).arg(model_dir);
        cmd
    }

    /// Runs `cmd` with `stdin` as its input (the prompt ids, which can
    /// outgrow the 128 KiB Linux allows one argument) and parses the last
    /// line of its output that is a JSON object.
    fn run_json<T: serde::de::DeserializeOwned>(
        &self,
        mut cmd: Command,
        stdin: String,
    ) -> Result<T, EngineError> {
        if !self.python.is_file() {
            return Err(EngineError::Load(format!(
                "{}: mlx-lm's Python is missing; run `scripts/setup-mlx`",
                self.python.display()
            )));
        }
        let running = |e: std::io::Error| {
            EngineError::Backend(format!("running {}: {e}", self.script.display()))
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(running)?;
        // Written from a thread, so that a child writing before it has read
        // all of its input cannot block both.
        let mut input = child.stdin.take();
        let writer = std::thread::spawn(move || match input.as_mut() {
            Some(pipe) => pipe.write_all(stdin.as_bytes()),
            None => Ok(()),
        });
        let out = child.wait_with_output().map_err(running)?;
        // A child that exits without reading its input breaks the pipe; its
        // status below says why.
        let _ = writer.join();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            return Err(EngineError::Backend(format!(
                "mlx-lm failed ({}): {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .unwrap_or("");
        serde_json::from_str(line)
            .map_err(|e| EngineError::Backend(format!("mlx-lm printed no report: {e}")))
    }
}

/// `mlx_lm_ref.py`'s sampling flags for `sampling` (none when greedy).
fn sampling_args(sampling: &SamplingParams) -> Vec<String> {
    let mut args = Vec::new();
    if !sampling.is_greedy() {
        args.extend([
            "--temp".into(),
            sampling.temperature.to_string(),
            "--top-p".into(),
            sampling.top_p.to_string(),
            "--top-k".into(),
            sampling.top_k.to_string(),
            "--min-p".into(),
            sampling.min_p.to_string(),
            "--seed".into(),
            sampling.seed.unwrap_or(0).to_string(),
        ]);
    }
    if sampling.repetition_penalty != 1.0 {
        args.extend([
            "--repetition-penalty".into(),
            sampling.repetition_penalty.to_string(),
            "--repetition-context".into(),
            sampling.repetition_context.to_string(),
        ]);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `mlx_lm_ref.py` run by `/bin/sh` in a folder of its
    /// own: the reference plumbing with a real child process.
    fn stand_in(name: &str, script: &str) -> (MlxLmReference, PathBuf) {
        let dir = std::env::temp_dir().join(format!("tw-mlx-lm-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ref.sh");
        std::fs::write(&path, script).unwrap();
        let reference = MlxLmReference {
            python: PathBuf::from("/bin/sh"),
            script: path,
            preload: None,
        };
        (reference, dir)
    }

    /// 32 prompts of 2,000 ids reach the script whole, on stdin: as one
    /// argument they would pass the 128 KiB Linux allows it.
    #[test]
    fn a_batchs_ids_reach_the_script_on_stdin_past_an_arguments_limit() {
        let prompts: Vec<Vec<u32>> = (0..32u32)
            .map(|p| (0..2_000).map(|i| 100_000 + p * 2_000 + i).collect())
            .collect();
        let text: Vec<String> = prompts
            .iter()
            .map(|p| p.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .collect();
        let bytes = text.join(";").len();
        assert!(bytes > 128 * 1024);
        // $1 is the subcommand, $2 the folder; a report only if the flag
        // says stdin and stdin held every byte.
        let script = format!(
            "n=$(wc -c)\n[ \"$3 $4\" = \"--prompts-ids -\" ] && [ \"$n\" -eq {bytes} ] && echo '{{\"rows\": []}}'\n"
        );
        let (reference, dir) = stand_in("batch", &script);
        let report = reference
            .bench_batch(&dir, &prompts, 4, &[1, 32], 1, &SamplingParams::default())
            .unwrap();
        assert!(report.rows.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failing_script_says_so_with_the_end_of_its_errors() {
        // It exits without reading its input, as a failing Python would.
        let (reference, dir) = stand_in("fail", "echo 'no such model' >&2\nexit 3\n");
        let cmd = reference.command("bench", &dir);
        let err = reference
            .run_json::<serde_json::Value>(cmd, "1,2,3".repeat(50_000))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such model"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
