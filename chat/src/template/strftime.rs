//! Python's `datetime.strftime` in UTC, for the directives chat templates
//! use, on a proleptic Gregorian calendar.

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Civil date from days since 1970-01-01 (proleptic Gregorian), after
/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

/// Python's `datetime.strftime` for the directives chat templates use, in
/// UTC. Unknown directives are copied as they are.
pub(crate) fn strftime(format: &str, unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (secs / 3600, secs / 60 % 60, secs % 60);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = usize::try_from((days + 3).rem_euclid(7)).unwrap_or(0);
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let month_name = MONTHS[(month as usize).saturating_sub(1) % 12];
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };

    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // glibc's "%-d" (no padding) is common in templates.
        let no_pad = chars.peek() == Some(&'-');
        if no_pad {
            chars.next();
        }
        let pad2 = |n: i64| {
            if no_pad {
                n.to_string()
            } else {
                format!("{n:02}")
            }
        };
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&pad2(year.rem_euclid(100))),
            Some('m') => out.push_str(&pad2(i64::from(month))),
            Some('d') => out.push_str(&pad2(i64::from(day))),
            Some('e') => out.push_str(&format!("{day:>2}")),
            Some('H') => out.push_str(&pad2(hour)),
            Some('I') => out.push_str(&pad2(hour12)),
            Some('M') => out.push_str(&pad2(minute)),
            Some('S') => out.push_str(&pad2(second)),
            Some('p') => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            Some('j') => out.push_str(&if no_pad {
                day_of_year.to_string()
            } else {
                format!("{day_of_year:03}")
            }),
            Some('B') => out.push_str(month_name),
            Some('b') | Some('h') => out.push_str(&month_name[..3]),
            Some('A') => out.push_str(DAYS[weekday]),
            Some('a') => out.push_str(&DAYS[weekday][..3]),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                if no_pad {
                    out.push('-');
                }
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Days since 1970-01-01 of a civil date (inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::template::RenderOptions;
    use crate::template::tests::render;

    #[test]
    fn strftime_matches_python() {
        // 2024-02-29 13:05:09 UTC, a Thursday; Python:
        // datetime(2024,2,29,13,5,9).strftime(...)
        let t = 1_709_211_909;
        assert_eq!(strftime("%d %b %Y", t), "29 Feb 2024");
        assert_eq!(strftime("%Y-%m-%d %H:%M:%S", t), "2024-02-29 13:05:09");
        assert_eq!(
            strftime("%A %B %-d, %I %p, day %j", t),
            "Thursday February 29, 01 PM, day 060"
        );
        assert_eq!(strftime("%a %y %% %Q", 0), "Thu 70 % %Q");
        let out = render(
            "{{ strftime_now('%d %B %Y') }}",
            &[],
            &RenderOptions::default()
                .with_now(UNIX_EPOCH + std::time::Duration::from_secs(t as u64)),
        )
        .unwrap();
        assert_eq!(out, "29 February 2024");
    }
}
