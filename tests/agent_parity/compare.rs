//! Comparing what reached the engine and the client with the references.

use std::cmp::Reverse;

use thinkwire_engine::Finish;

use super::NEAR_TIE;
use super::input::PassRef;
use super::support::recording::Recorded;

/// What one pass compared.
pub struct Compared {
    pub steps: usize,
    pub exact: bool,
}

/// Compares one generation with its reference: prompt ids exactly, output
/// ids and `streamed` text up to the first near-tie (exactly without one).
/// `trimmed`: the text is a reasoning block, streamed without its
/// surrounding whitespace (layout, see the splitter).
pub fn compare_pass(
    call: &Recorded,
    pass: &PassRef,
    streamed: &str,
    vocab: usize,
    trimmed: bool,
) -> Result<Compared, String> {
    if call.prompt != pass.prompt_ids {
        let at = first_difference(&call.prompt, &pass.prompt_ids);
        return Err(format!(
            "prompt ids differ from transformers at index {at} \
             (thinkwire {} ids, transformers {}): thinkwire {:?}…, transformers {:?}…",
            call.prompt.len(),
            pass.prompt_ids.len(),
            window(&call.prompt, at),
            window(&pass.prompt_ids, at),
        ));
    }
    let mut produced = call.generated.clone();
    if let Finish::StopToken(id) = call.finish {
        produced.push(id);
    }
    let tie = pass.gaps.iter().position(|&g| g < NEAR_TIE);
    let limit = tie.unwrap_or(pass.output_ids.len());
    let ids_ok = match tie {
        None => produced == pass.output_ids,
        Some(_) => produced.len() >= limit && produced[..limit] == pass.output_ids[..limit],
    };
    if !ids_ok {
        let at = first_difference(&produced, &pass.output_ids);
        return Err(format!(
            "generated ids differ from mlx-lm at step {at} (compared up to {limit}, \
             reference gap there {:?}): thinkwire {:?}, mlx-lm {:?}",
            pass.gaps.get(at),
            window(&produced, at),
            window(&pass.output_ids, at),
        ));
    }
    // A random-weight model may pick an id of the embedding's padding that
    // the tokenizer does not have (a trained one never does): the ids still
    // match, but its text is undefined (mlx-lm's detokenizer prints a byte
    // for it, transformers nothing), so the text is compared up to there.
    let unknown = pass.output_ids[..limit]
        .iter()
        .position(|&id| id as usize >= vocab);
    let exact = tie.is_none() && unknown.is_none();
    let text_limit = unknown.unwrap_or(limit).min(pass.pieces.len());
    let prefix: String = pass.pieces[..text_limit].concat();
    let expected = if exact {
        format!("{prefix}{}", pass.tail)
    } else {
        prefix
    };
    let expected = if trimmed { expected.trim() } else { &expected };
    let text_ok = if exact {
        streamed == expected
    } else {
        streamed.starts_with(expected)
    };
    if !text_ok {
        let at = streamed
            .char_indices()
            .zip(expected.chars())
            .find(|((_, a), b)| a != b)
            .map_or(streamed.len().min(expected.len()), |((i, _), _)| i);
        let around = |s: &str| -> String {
            s.get(at.saturating_sub(12)..)
                .unwrap_or(s)
                .chars()
                .take(24)
                .collect()
        };
        return Err(format!(
            "streamed text differs from mlx-lm's at byte {at} \
             ({} bytes streamed, {} expected{}, finish {}): thinkwire {:?}, mlx-lm {:?}",
            streamed.len(),
            expected.len(),
            if exact { ", exactly" } else { " as a prefix" },
            pass.finish,
            around(streamed),
            around(expected),
        ));
    }
    Ok(Compared {
        steps: limit,
        exact,
    })
}

fn first_difference(a: &[u32], b: &[u32]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

fn window(ids: &[u32], at: usize) -> &[u32] {
    &ids[at.min(ids.len())..ids.len().min(at + 6)]
}

pub fn report(label: &str, failures: &[String], compared: &[Compared], min_steps: usize) {
    let steps: usize = compared.iter().map(|c| c.steps).sum();
    let exact = compared.iter().filter(|c| c.exact).count();
    eprintln!(
        "{label}: {} passes matched, {steps} generated tokens compared, {exact} passes without a near-tie compared exactly",
        compared.len()
    );
    assert!(
        failures.is_empty(),
        "{label}: {} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        steps >= min_steps,
        "{label}: only {steps} tokens compared before near-ties"
    );
}

/// Pairs each reference pass with the recorded generation that was given
/// its prompt. The runs go concurrently, so the recording is in the order
/// generations finished. Exact prompts are paired first, so one that
/// differs cannot take another's generation. A pass left over takes the
/// remaining generation whose prompt starts most like its own, so the
/// failure can say where the prompts part. `None` where nothing is left.
pub fn pair_by_prompt(
    calls: &mut Vec<Recorded>,
    references: &[Option<&[u32]>],
) -> Vec<Option<Recorded>> {
    let mut paired: Vec<Option<Recorded>> = references.iter().map(|_| None).collect();
    for (slot, reference) in paired.iter_mut().zip(references) {
        let Some(reference) = reference else { continue };
        if let Some(at) = calls.iter().position(|c| c.prompt == *reference) {
            *slot = Some(calls.remove(at));
        }
    }
    for (slot, reference) in paired.iter_mut().zip(references) {
        let Some(reference) = reference else { continue };
        if slot.is_some() {
            continue;
        }
        let closest = calls
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| {
                (
                    first_difference(&c.prompt, reference),
                    Reverse(c.prompt.len().abs_diff(reference.len())),
                )
            })
            .map(|(at, _)| at);
        *slot = closest.map(|at| calls.remove(at));
    }
    paired
}
