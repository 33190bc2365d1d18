//! The small arrays a batched decode step builds from host integers (each
//! sequence's position, its batch slot, which cached positions each slot
//! sees), built once per pass and handed to every layer that asks for the
//! same values. Each layer's batch cache and attention used to build its
//! own: on a GPU every one is a host-to-device copy, and a ragged step's
//! mask two or three launches more, per layer.
//!
//! Layers compare values, not trust: a layer whose slots or lengths differ
//! from the last one asked for (a sliding window, a slot taken in another
//! order) gets its own arrays.

use std::cell::RefCell;

use mlx_rs::Array;

type R<T> = mlx_rs::error::Result<T>;

/// What an array was built from.
#[derive(PartialEq)]
enum Key {
    /// `Array::from_slice(values, shape)`.
    Ints(Vec<i32>, Vec<i32>),
    /// [`length_mask`] of these lengths, padded length and window.
    Mask(Vec<i32>, i32, Option<i32>),
}

/// One pass's arrays, by what they were built from.
#[derive(Default)]
pub(crate) struct StepArrays(RefCell<Vec<(Key, Array)>>);

impl StepArrays {
    /// `values` as an int32 array of `shape`.
    pub(crate) fn ints(&self, values: &[i32], shape: &[i32]) -> R<Array> {
        let key = Key::Ints(values.to_vec(), shape.to_vec());
        self.get_or(key, || Ok(Array::from_slice(values, shape)))
    }

    /// Which positions each slot's query sees in a batched decode step:
    /// its own `lens[s]` (the query last), within the last `window` if
    /// given; `[slots, 1, 1, len]` booleans.
    pub(crate) fn length_mask(&self, lens: &[i32], len: i32, window: Option<i32>) -> R<Array> {
        let key = Key::Mask(lens.to_vec(), len, window);
        self.get_or(key, || length_mask(lens, len, window))
    }

    fn get_or(&self, key: Key, build: impl FnOnce() -> R<Array>) -> R<Array> {
        if let Some((_, a)) = self.0.borrow().iter().find(|(k, _)| *k == key) {
            return Ok(a.clone());
        }
        let a = build()?;
        self.0.borrow_mut().push((key, a.clone()));
        Ok(a)
    }
}

fn length_mask(lens: &[i32], len: i32, window: Option<i32>) -> R<Array> {
    let s = lens.len() as i32;
    let positions = mlx_rs::ops::arange::<_, i32>(0, len, None)?.reshape(&[1, len])?;
    let lens = Array::from_slice(lens, &[s, 1]);
    let mut seen = positions.lt(&lens)?;
    if let Some(w) = window {
        seen = seen.logical_and(&positions.ge(lens.subtract(Array::from_int(w))?)?)?;
    }
    seen.reshape(&[s, 1, 1, len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `a` and `b` hold one buffer (evaluated): the same array.
    fn same<T: mlx_rs::ArrayElement>(a: &Array, b: &Array) -> bool {
        a.eval().unwrap();
        b.eval().unwrap();
        a.as_slice::<T>().as_ptr() == b.as_slice::<T>().as_ptr()
    }

    #[test]
    fn the_same_values_give_the_same_array() {
        let arrays = StepArrays::default();
        let a = arrays.ints(&[3, 1, 2], &[3]).unwrap();
        let b = arrays.ints(&[3, 1, 2], &[3]).unwrap();
        let c = arrays.ints(&[3, 1, 4], &[3]).unwrap();
        let d = arrays.ints(&[3, 1, 2], &[3, 1]).unwrap();
        assert!(same::<i32>(&a, &b));
        assert!(!same::<i32>(&a, &c));
        assert!(!same::<i32>(&a, &d));
        assert_eq!(c.as_slice::<i32>(), &[3, 1, 4]);
        assert_eq!(d.shape(), &[3, 1]);
    }

    #[test]
    fn a_mask_shows_each_slot_its_own_positions() {
        let arrays = StepArrays::default();
        let mask = arrays.length_mask(&[2, 4], 4, None).unwrap();
        let again = arrays.length_mask(&[2, 4], 4, None).unwrap();
        assert!(same::<bool>(&mask, &again));
        assert_eq!(mask.shape(), &[2, 1, 1, 4]);
        assert_eq!(
            mask.as_slice::<bool>(),
            &[true, true, false, false, true, true, true, true]
        );
        let window = arrays.length_mask(&[2, 4], 4, Some(2)).unwrap();
        window.eval().unwrap();
        assert_eq!(
            window.as_slice::<bool>(),
            &[true, true, false, false, false, false, true, true]
        );
    }
}
