//! `thinkwire bench --pairs N`: thinkwire and mlx-lm timed in turn, N
//! times, and the ratio taken pair by pair. On a shared machine whose
//! speed drifts by tens of percent within minutes, one run of each engine
//! minutes apart says more about the drift than about the engines; a
//! ratio of two runs that ran back to back, over several such pairs,
//! says how the engines compare.

/// The median of `values` (the mean of the middle two for an even
/// count); `None` when there are none.
pub(super) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// `0.97x` for one pair; `0.97x (median of 5 pairs, 0.91x-1.04x)` for
/// more, so the spread is read beside the figure.
pub(super) fn summary(ratios: &[f64]) -> String {
    let Some(mid) = median(ratios) else {
        return "-".into();
    };
    if ratios.len() == 1 {
        return format!("{mid:.2}x");
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{mid:.2}x (median of {} pairs, {lo:.2}x-{hi:.2}x)",
        ratios.len()
    )
}

/// `ours[i] / theirs[i]` for each pair `i`.
pub(super) fn ratios(ours: &[f64], theirs: &[f64]) -> Vec<f64> {
    ours.iter()
        .zip(theirs)
        .map(|(a, b)| a / b.max(1e-12))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_takes_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        // A failed division is left out rather than sorted anywhere.
        assert_eq!(median(&[f64::NAN, 2.0, 4.0]), Some(3.0));
    }

    #[test]
    fn a_summary_of_several_pairs_gives_the_spread() {
        assert_eq!(summary(&[]), "-");
        assert_eq!(summary(&[0.974]), "0.97x");
        assert_eq!(
            summary(&[1.3, 0.85, 0.76]),
            "0.85x (median of 3 pairs, 0.76x-1.30x)"
        );
    }

    #[test]
    fn ratios_are_taken_pair_by_pair() {
        assert_eq!(ratios(&[2.0, 3.0], &[4.0, 3.0]), vec![0.5, 1.0]);
        assert_eq!(ratios(&[2.0, 3.0, 9.0], &[4.0]), vec![0.5]);
    }
}
