//! What a step does to a sequence's logits before any pick, in its graph:
//! the request's logit bias (OpenAI's, added first, as vLLM and llama.cpp
//! order it), then penalties on tokens the sequence has already seen:
//! mlx-lm's repetition penalty (a seen token's logit divided by the factor
//! where positive, multiplied by it elsewhere, over the last
//! `repetition_context` tokens, the prompt's included) and OpenAI's
//! frequency and presence penalties (subtracted per time, and once, a
//! token was generated; only the run's own output counts, a resumed
//! generation's earlier output included).
//!
//! They are in the graph, not on the host, so an adjusted sequence's steps
//! are queued ahead like any other's: the token the previous step picked
//! is still unread when the next step is built. So each row's last input
//! comes in as an array, and only the tokens before it as host lists.
//! Every pick after them (greedy, drawn on the device, under a mask, or by
//! the host sampler) sees the same adjusted logits.

use std::collections::HashMap;
use std::sync::Arc;

use mlx_rs::Array;
use mlx_rs::ops::indexing::{put_along_axis, take_along_axis};

use crate::SamplingParams;
use crate::mlx::kernels::indexed::add_along_axis;

type R<T> = mlx_rs::error::Result<T>;

/// A sequence's adjustments (validated by `SamplingParams::validate`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Adjust {
    /// Token ids and what to add to their logits.
    bias: Arc<[(i32, f32)]>,
    /// Where the run's output begins, if before the prompt's end (a
    /// resumed generation).
    generated_from: Option<usize>,
    /// 1: off.
    repetition: f32,
    /// Tokens the repetition penalty looks at, the last input included.
    window: usize,
    /// 0: off.
    frequency: f32,
    /// 0: off.
    presence: f32,
}

impl Adjust {
    /// `None` where nothing applies (the step's graph stays as it is).
    pub fn of(params: &SamplingParams) -> Option<Self> {
        // A token named twice takes the sum of its biases, once.
        let mut sums: Vec<(u32, f32)> = params.logit_bias.clone();
        sums.sort_by_key(|&(t, _)| t);
        sums.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1 += later.1;
            }
            same
        });
        let bias: Arc<[(i32, f32)]> = sums.iter().map(|&(t, b)| (t as i32, b)).collect();
        let adjust = Self {
            bias,
            generated_from: params.generated_from,
            repetition: params.repetition_penalty,
            window: params.repetition_context,
            frequency: params.frequency_penalty,
            presence: params.presence_penalty,
        };
        (adjust.repeats() || adjust.counts() || !adjust.bias.is_empty()).then_some(adjust)
    }

    fn repeats(&self) -> bool {
        self.repetition != 1.0 && self.window > 0
    }

    fn counts(&self) -> bool {
        self.frequency != 0.0 || self.presence != 0.0
    }
}

/// One row's adjustments, with what its penalties need of its sequence's
/// tokens before the pass's last input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AdjustRow {
    adjust: Adjust,
    /// The repetition window's tokens before the last input.
    recent: Vec<i32>,
    /// Each distinct token generated before the last input, and how often.
    generated: Vec<(i32, f32)>,
    /// Whether the last input is a generated token (not the prompt's).
    input_generated: bool,
}

/// A sequence's counts of the tokens it generated, kept up as it goes
/// (its tokens only ever grow).
#[derive(Debug, Default)]
pub(crate) struct Seen {
    counts: HashMap<u32, u32>,
    /// Generated tokens counted so far.
    counted: usize,
}

impl Seen {
    /// The row of the token at `position` of a sequence whose tokens are
    /// `history`, the first `prompt` of them its prompt (its output from
    /// `generated_from` on, where that is earlier). The token at
    /// `position - 1` is the pass's last input, read or not, so only
    /// those before it are taken from `history`.
    pub fn row(
        &mut self,
        adjust: &Adjust,
        history: &[u32],
        prompt: usize,
        position: usize,
    ) -> AdjustRow {
        let prompt = adjust.generated_from.map_or(prompt, |g| g.min(prompt));
        let before = position.saturating_sub(1).min(history.len());
        let recent = match adjust.repeats() {
            true => {
                let from = before.saturating_sub(adjust.window - 1);
                history[from..before].iter().map(|&t| t as i32).collect()
            }
            false => Vec::new(),
        };
        let generated = match adjust.counts() {
            true => {
                let start = prompt + self.counted;
                if before > start {
                    for &t in &history[start..before] {
                        *self.counts.entry(t).or_default() += 1;
                    }
                    self.counted = before - prompt;
                }
                self.counts
                    .iter()
                    .map(|(&t, &n)| (t as i32, n as f32))
                    .collect()
            }
            false => Vec::new(),
        };
        AdjustRow {
            adjust: adjust.clone(),
            recent,
            generated,
            input_generated: position > prompt,
        }
    }
}

/// `logits` (`[rows, vocab]`, f32) with each row's adjustments applied;
/// `inputs` (`[rows, 1]` int32) holds each row's last input token. Rows
/// without adjustments come out unchanged.
pub(crate) fn adjust(logits: &Array, rows: &[Option<AdjustRow>], inputs: &Array) -> R<Array> {
    let n = rows.len() as i32;
    let vocab = logits.shape().last().copied().unwrap_or(0);
    if logits.shape() != [n, vocab] || inputs.shape() != [n, 1] {
        return Err(mlx_rs::error::Exception::custom(
            "adjustments: logits, inputs and rows disagree",
        ));
    }
    let column = |f: &dyn Fn(&AdjustRow) -> f32, off: f32| -> Array {
        let v: Vec<f32> = rows.iter().map(|r| r.as_ref().map_or(off, f)).collect();
        Array::from_slice(&v, &[n, 1])
    };
    let mut out = logits.clone();
    if rows.iter().flatten().any(|r| !r.adjust.bias.is_empty()) {
        // Padding adds 0 to token 0.
        let (at, bias) = padded(rows, None, |r| r.adjust.bias.to_vec())?;
        out = add_along_axis(&out, &at, &bias, 1)?;
    }
    if rows.iter().flatten().any(|r| r.adjust.repeats()) {
        // Each row's window, padded with its last input: a token in a
        // window twice is penalized once, every copy writing one value.
        let (at, _) = padded(rows, Some(inputs), |r| match r.adjust.repeats() {
            true => r.recent.iter().map(|&t| (t, 0.0)).collect(),
            false => Vec::new(),
        })?;
        let factor = column(
            &|r| match r.adjust.repeats() {
                true => r.adjust.repetition,
                false => 1.0,
            },
            1.0,
        );
        let seen = take_along_axis(&out, &at, -1)?;
        let penalized = mlx_rs::ops::select(
            &seen.gt(Array::from_f32(0.0))?,
            &seen.divide(&factor)?,
            &seen.multiply(&factor)?,
        )?;
        out = put_along_axis(&out, &at, &penalized, -1)?;
    }
    if rows.iter().flatten().any(|r| r.adjust.counts()) {
        // Each row's counts over the vocabulary: the host's, plus the last
        // input where it was generated.
        let (at, counts) = padded(rows, Some(inputs), |r| r.generated.clone())?;
        let input_counts = column(&|r| f32::from(u8::from(r.input_generated)), 0.0);
        let counts = mlx_rs::ops::concatenate(&[counts, input_counts], 1)?;
        let zeros = mlx_rs::ops::zeros::<f32>(&[n, vocab])?;
        let dense = add_along_axis(&zeros, &at, &counts, 1)?;
        let present = dense
            .gt(Array::from_f32(0.0))?
            .as_dtype(mlx_rs::Dtype::Float32)?;
        let by_count = dense.multiply(column(&|r| r.adjust.frequency, 0.0))?;
        let once = present.multiply(column(&|r| r.adjust.presence, 0.0))?;
        out = out.subtract(by_count.add(once)?)?;
    }
    Ok(out)
}

/// Each row's `(token, value)` pairs from `of` as `[rows, width]` token
/// ids and values, padded with token 0 and value 0; with `inputs`, the
/// padding is each row's input instead and a last column of ids holds it
/// (`[rows, width + 1]` ids).
fn padded(
    rows: &[Option<AdjustRow>],
    inputs: Option<&Array>,
    of: impl Fn(&AdjustRow) -> Vec<(i32, f32)>,
) -> R<(Array, Array)> {
    let lists: Vec<Vec<(i32, f32)>> = rows
        .iter()
        .map(|r| r.as_ref().map_or_else(Vec::new, &of))
        .collect();
    let n = rows.len() as i32;
    let width = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut ids = vec![0i32; rows.len() * width];
    let mut known = vec![false; rows.len() * width];
    let mut values = vec![0f32; rows.len() * width];
    for (i, list) in lists.iter().enumerate() {
        for (j, &(t, v)) in list.iter().enumerate() {
            ids[i * width + j] = t;
            known[i * width + j] = true;
            values[i * width + j] = v;
        }
    }
    let shape = [n, width as i32];
    let (ids, values) = (
        Array::from_slice(&ids, &shape),
        Array::from_slice(&values, &shape),
    );
    let Some(inputs) = inputs else {
        return Ok((ids, values));
    };
    let before = mlx_rs::ops::select(Array::from_slice(&known, &shape), ids, inputs)?;
    Ok((
        mlx_rs::ops::concatenate(&[before, inputs.clone()], 1)?,
        values,
    ))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn params(repetition: f32, window: usize, frequency: f32, presence: f32) -> SamplingParams {
        SamplingParams {
            repetition_penalty: repetition,
            repetition_context: window,
            frequency_penalty: frequency,
            presence_penalty: presence,
            ..SamplingParams::greedy()
        }
    }

    /// The adjustments as a host would apply them to one row, given the
    /// sequence's tokens up to and including the last input.
    pub(in crate::mlx::scheduler) fn reference(
        logits: &mut [f32],
        p: &SamplingParams,
        tokens: &[u32],
        prompt: usize,
    ) {
        let mut bias: HashMap<u32, f32> = HashMap::new();
        for &(t, b) in &p.logit_bias {
            *bias.entry(t).or_default() += b;
        }
        for (t, b) in bias {
            logits[t as usize] += b;
        }
        if p.repetition_penalty != 1.0 {
            let from = tokens.len().saturating_sub(p.repetition_context);
            let mut seen = tokens[from..].to_vec();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                let l = &mut logits[t as usize];
                *l = if *l > 0.0 {
                    *l / p.repetition_penalty
                } else {
                    *l * p.repetition_penalty
                };
            }
        }
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for &t in tokens.get(prompt..).unwrap_or(&[]) {
            *counts.entry(t).or_default() += 1;
        }
        for (t, c) in counts {
            let present = f32::from(u8::from(c > 0));
            let adjust = c as f32 * p.frequency_penalty + present * p.presence_penalty;
            logits[t as usize] -= adjust;
        }
    }

    #[test]
    fn the_graph_adjusts_as_the_host_would_bit_for_bit() {
        let vocab = 300usize;
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        let settings = [
            params(1.3, 8, 0.0, 0.0),
            params(0.8, 64, 0.0, 0.0),
            params(1.0, 64, 0.7, 0.0),
            params(1.0, 64, 0.0, -1.5),
            params(1.2, 5, 1.1, 0.4),
            params(1.0, 64, 0.0, 0.0),
            SamplingParams {
                logit_bias: vec![(7, -100.0), (0, 2.5), (299, 0.125)],
                ..params(1.0, 64, 0.0, 0.0)
            },
            SamplingParams {
                logit_bias: vec![(7, 30.0), (12, -1.0)],
                ..params(1.4, 16, 0.3, 0.2)
            },
        ];
        // Sequences of 12-40 tokens, 10 of them the prompt; repeats come
        // from a small alphabet. The last input is the last token, so the
        // token picked is at `tokens.len()`.
        let sequences: Vec<Vec<u32>> = (0..settings.len() * 2)
            .map(|i| {
                let len = 12 + (next() as usize % 29);
                (0..len)
                    .map(|j| match j % 3 {
                        0 if i % 2 == 0 => 7,
                        _ => next() % 40,
                    })
                    .collect()
            })
            .collect();
        let logits: Vec<f32> = (0..sequences.len() * vocab)
            .map(|_| (next() % 2_000) as f32 / 100.0 - 10.0)
            .collect();
        let prompt = 10;
        let mut rows = Vec::new();
        let mut want = logits.clone();
        for (i, tokens) in sequences.iter().enumerate() {
            let p = &settings[i % settings.len()];
            rows.push(Adjust::of(p).map(|a| {
                // Counted over two calls, as steps would.
                let mut seen = Seen::default();
                seen.row(&a, &tokens[..tokens.len() - 3], prompt, tokens.len() - 3);
                seen.row(&a, tokens, prompt, tokens.len())
            }));
            reference(&mut want[i * vocab..(i + 1) * vocab], p, tokens, prompt);
        }
        let inputs: Vec<i32> = sequences.iter().map(|t| t[t.len() - 1] as i32).collect();
        let n = sequences.len() as i32;
        let got = adjust(
            &Array::from_slice(&logits, &[n, vocab as i32]),
            &rows,
            &Array::from_slice(&inputs, &[n, 1]),
        )
        .unwrap();
        got.eval().unwrap();
        let got = got.as_slice::<f32>();
        let changed = (0..logits.len()).filter(|&i| logits[i] != got[i]).count();
        assert!(changed > 50, "only {changed} logits adjusted");
        for (i, (w, g)) in want.iter().zip(got).enumerate() {
            assert_eq!(
                w.to_bits(),
                g.to_bits(),
                "row {} token {}",
                i / vocab,
                i % vocab
            );
        }
    }

    #[test]
    fn counts_only_generated_tokens_and_not_the_unread_input() {
        let a = Adjust::of(&params(1.5, 3, 1.0, 0.0)).unwrap();
        let mut seen = Seen::default();
        // Prompt [4, 5, 4]; generated 5, 5 read, the next one unread.
        let history = [4, 5, 4, 5, 5];
        let row = seen.row(&a, &history, 3, 6);
        assert_eq!(row.recent, vec![5, 5]);
        assert_eq!(row.generated, vec![(5, 2.0)]);
        assert!(row.input_generated);
        // The prompt's last token as the input: nothing generated yet.
        let row = Seen::default().row(&a, &history[..3], 3, 3);
        assert_eq!(row.recent, vec![4, 5]);
        assert!(row.generated.is_empty() && !row.input_generated);
        // A resumed generation: its output began at index 1 of its prompt.
        let resumed = Adjust::of(&SamplingParams {
            generated_from: Some(1),
            ..params(1.5, 3, 1.0, 0.0)
        })
        .unwrap();
        let row = Seen::default().row(&resumed, &history[..3], 3, 3);
        assert_eq!(row.generated, vec![(5, 1.0)]);
        assert!(row.input_generated);
        assert!(Adjust::of(&params(1.0, 64, 0.0, 0.0)).is_none());
        assert!(Adjust::of(&params(1.3, 0, 0.0, 0.0)).is_none());
        let biased = SamplingParams {
            logit_bias: vec![(3, 1.0)],
            ..params(1.0, 64, 0.0, 0.0)
        };
        assert!(Adjust::of(&biased).is_some());
    }

    /// A GPU launches each operation: adjusting 8 rows takes as many as
    /// 2 (a row's bias, window and counts are data, not operations).
    #[test]
    fn operations_do_not_grow_with_the_rows() {
        let p = SamplingParams {
            logit_bias: vec![(1, -3.0), (4, 2.0)],
            ..params(1.2, 16, 0.5, 0.25)
        };
        let operations = |n: usize| {
            let rows: Vec<_> = (0..n)
                .map(|i| {
                    let history: Vec<u32> = (0..20 + i as u32).map(|t| t % 7).collect();
                    let len = history.len();
                    let a = Adjust::of(&p).unwrap();
                    Some(Seen::default().row(&a, &history, 4, len + 1))
                })
                .collect();
            let logits = mlx_rs::ops::zeros::<f32>(&[n as i32, 50]).unwrap();
            let inputs = Array::from_slice(&vec![3i32; n], &[n as i32, 1]);
            let out = adjust(&logits, &rows, &inputs).unwrap();
            crate::mlx::kernels::graph::operation_kinds(&[&out]).unwrap()
        };
        let (two, eight) = (operations(2), operations(8));
        assert_eq!(two, eight);
        assert!(two.values().sum::<usize>() < 50, "{two:?}");
    }
}
