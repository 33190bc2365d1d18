//! The seeded workload: when each request arrives (a Poisson process at
//! the offered rate) and what it asks (short chats, long prompts,
//! multi-turn replays). Prompt `i` depends only on the seed and `i`, so
//! every rate of a sweep and every server sees the same conversations in
//! the same order; only their spacing changes with the rate.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::cli::rng::Rng;

/// Which kind of conversation a request is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// One short user question.
    Short,
    /// One user message carrying a long document (about `--long-tokens`).
    Long,
    /// Three user turns, the first two with their assistant answers replayed.
    MultiTurn,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 3] = [Class::Short, Class::Long, Class::MultiTurn];

    /// Its name in flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            Class::Short => "short",
            Class::Long => "long",
            Class::MultiTurn => "multi",
        }
    }
}

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client.
    User,
    /// The model, replayed from an earlier turn.
    Assistant,
}

/// One message of a planned conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub text: String,
}

/// One request of the plan.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Its position in the plan (and the item its prompt is drawn for).
    pub index: usize,
    /// When it is due, from the start of the load.
    pub at: Duration,
    /// What kind of conversation.
    pub class: Class,
    /// The conversation, ending with a user message.
    pub messages: Vec<Message>,
}

/// Relative weights of the classes (`short:70,long:20,multi:10`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Mix {
    /// Weight of short chats.
    pub short: f64,
    /// Weight of long prompts.
    pub long: f64,
    /// Weight of multi-turn replays.
    pub multi: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Self {
            short: 70.0,
            long: 20.0,
            multi: 10.0,
        }
    }
}

impl Mix {
    fn draw(&self, u: f64) -> Class {
        let total = self.short + self.long + self.multi;
        let x = u * total;
        if x < self.short {
            Class::Short
        } else if x < self.short + self.long {
            Class::Long
        } else {
            Class::MultiTurn
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "short:{},long:{},multi:{}",
            self.short, self.long, self.multi
        )
    }
}

impl FromStr for Mix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut mix = Mix {
            short: 0.0,
            long: 0.0,
            multi: 0.0,
        };
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, weight) = part
                .split_once(':')
                .ok_or_else(|| format!("{part:?}: expected CLASS:WEIGHT"))?;
            let weight: f64 = weight
                .trim()
                .parse()
                .map_err(|_| format!("{part:?}: the weight is not a number"))?;
            if !weight.is_finite() || weight < 0.0 {
                return Err(format!("{part:?}: a weight is a number ≥ 0"));
            }
            match name.trim() {
                "short" => mix.short = weight,
                "long" => mix.long = weight,
                "multi" => mix.multi = weight,
                other => return Err(format!("{other:?}: classes are short, long, multi")),
            }
        }
        if mix.short + mix.long + mix.multi <= 0.0 {
            return Err("the weights add up to nothing".into());
        }
        Ok(mix)
    }
}

/// What shapes the plan besides the rate.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The seed of arrivals and prompts.
    pub seed: u64,
    /// The classes' weights.
    pub mix: Mix,
    /// Rough bounds of a long prompt, in tokens of a typical BPE tokenizer
    /// (the report gives the servers' own counts).
    pub long_tokens: (usize, usize),
}

// Streams of the seed: arrivals and prompts never share random numbers,
// so changing the rate leaves prompt `i` as it was.
const ARRIVALS: u64 = 1;
const PROMPTS: u64 = 2;

/// Tokens per generated filler word (common English words are one BPE
/// token with their leading space; a sentence adds a capital and a period).
const TOKENS_PER_WORD: f64 = 1.1;

impl Workload {
    /// The arrivals of a Poisson process at `rate` per second over
    /// `duration`, each with its prompt.
    pub fn plan(&self, rate: f64, duration: Duration) -> Vec<Planned> {
        let mut clock = Rng::new(self.seed ^ ARRIVALS.wrapping_mul(0xA076_1D64_78BD_642F));
        let mut out = Vec::new();
        if rate.is_nan() || rate <= 0.0 {
            return out;
        }
        let end = duration.as_secs_f64();
        let mut t = clock.exponential(rate);
        while t < end {
            let index = out.len();
            let (class, messages) = self.prompt(index);
            out.push(Planned {
                index,
                at: Duration::from_secs_f64(t),
                class,
                messages,
            });
            t += clock.exponential(rate);
        }
        out
    }

    /// Prompt `index`: the same for every rate.
    pub fn prompt(&self, index: usize) -> (Class, Vec<Message>) {
        let mut rng = Rng::for_item(self.seed, PROMPTS, index as u64);
        let class = self.mix.draw(rng.unit());
        let user = |text: String| Message {
            role: Role::User,
            text,
        };
        let messages = match class {
            Class::Short => vec![user(question(&mut rng))],
            Class::Long => {
                let tokens = rng.range(self.long_tokens.0, self.long_tokens.1);
                let words = (tokens as f64 / TOKENS_PER_WORD).round() as usize;
                let task = rng.pick(LONG_TASKS);
                vec![user(format!("{task}\n\n{}", filler(&mut rng, words)))]
            }
            Class::MultiTurn => {
                let mut turns = Vec::new();
                for _ in 0..2 {
                    turns.push(user(question(&mut rng)));
                    let words = rng.range(25, 60);
                    turns.push(Message {
                        role: Role::Assistant,
                        text: filler(&mut rng, words),
                    });
                }
                turns.push(user(rng.pick(FOLLOW_UPS).to_string()));
                turns
            }
        };
        (class, messages)
    }
}

fn question(rng: &mut Rng) -> String {
    let template = rng.pick(QUESTIONS);
    let topic = rng.pick(TOPICS);
    template.replace("{}", topic)
}

/// `words` words of plain sentences (8 to 16 words each).
fn filler(rng: &mut Rng, words: usize) -> String {
    let mut out = String::with_capacity(words * 7);
    let mut left = words;
    while left > 0 {
        let n = rng.range(8, 16).min(left);
        for i in 0..n {
            let word = *rng.pick(WORDS);
            if i == 0 {
                if !out.is_empty() {
                    out.push(' ');
                }
                let mut chars = word.chars();
                if let Some(c) = chars.next() {
                    out.extend(c.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push('.');
        left -= n;
    }
    out
}

const QUESTIONS: &[&str] = &[
    "What is {}? Answer briefly.",
    "Explain {} in two sentences.",
    "Give me three facts about {}.",
    "Why does {} matter?",
    "How would you describe {} to a child?",
    "Write a short poem about {}.",
    "What are common mistakes people make with {}?",
    "Summarize the history of {} in a few lines.",
    "List two pros and two cons of {}.",
    "What is a good first step to learn about {}?",
];

const TOPICS: &[&str] = &[
    "photosynthesis",
    "the French revolution",
    "a CPU cache",
    "compound interest",
    "volcanoes",
    "the water cycle",
    "public key cryptography",
    "sourdough bread",
    "jazz music",
    "the moon landing",
    "recycling",
    "black holes",
    "a healthy breakfast",
    "the printing press",
    "electric cars",
    "honey bees",
    "chess openings",
    "the Roman empire",
    "rainbows",
    "time zones",
];

const LONG_TASKS: &[&str] = &[
    "Summarize the following notes in three sentences.",
    "Read the text below and list its main points.",
    "Here is a document. What is it mostly about?",
    "Give a title to the following text and explain your choice.",
];

const FOLLOW_UPS: &[&str] = &[
    "Can you say that more simply?",
    "Thanks. What should I read next?",
    "Give me one example.",
    "How does that compare with what you said first?",
    "Summarize our conversation in one sentence.",
];

const WORDS: &[&str] = &[
    "the", "river", "town", "people", "market", "morning", "water", "light", "small", "large",
    "old", "new", "house", "garden", "road", "city", "school", "child", "teacher", "book", "story",
    "year", "day", "night", "work", "family", "friend", "field", "tree", "stone", "bridge", "boat",
    "train", "station", "letter", "window", "door", "table", "bread", "coffee", "music", "song",
    "walk", "run", "bring", "carry", "open", "close", "find", "keep", "leave", "make", "take",
    "give", "see", "hear", "know", "think", "say", "tell", "ask", "answer", "build", "grow",
    "change", "move", "live", "stay", "begin", "end", "early", "late", "quiet", "busy", "warm",
    "cold", "green", "blue", "red", "white", "north", "south", "east", "west", "over", "under",
    "near", "after", "before", "with", "without", "and", "but", "so", "then", "because", "while",
    "every", "some", "many", "few", "most", "other", "same", "good", "long", "short", "high",
    "low", "first", "last", "next", "number", "group", "part", "place", "world", "country",
    "money", "paper", "plan", "idea", "question", "reason", "result", "price", "rain", "snow",
    "wind", "sun", "hill", "lake", "farm", "animal", "horse", "dog", "bird", "fish", "food",
    "meal", "street",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn workload() -> Workload {
        Workload {
            seed: 11,
            mix: Mix::default(),
            long_tokens: (1000, 2000),
        }
    }

    #[test]
    fn the_same_seed_plans_the_same_load_and_rates_share_prompts() {
        let w = workload();
        let a = w.plan(2.0, Duration::from_secs(60));
        let b = w.plan(2.0, Duration::from_secs(60));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.at == y.at && x.messages == y.messages)
        );
        // Another rate: other times, the same prompts in the same order.
        let c = w.plan(5.0, Duration::from_secs(60));
        assert!(c.len() > a.len());
        assert!(
            a.iter()
                .zip(&c)
                .all(|(x, y)| x.messages == y.messages && x.class == y.class)
        );
        assert_ne!(a[1].at, c[1].at);
        let other = Workload { seed: 12, ..w }.plan(2.0, Duration::from_secs(60));
        assert_ne!(other[0].messages, a[0].messages);
    }

    #[test]
    fn arrivals_follow_the_rate_and_stay_inside_the_duration() {
        let plan = workload().plan(10.0, Duration::from_secs(200));
        // 2000 expected; a Poisson count's standard deviation is ~45.
        assert!((1800..2200).contains(&plan.len()), "{}", plan.len());
        assert!(plan.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(plan.iter().all(|p| p.at < Duration::from_secs(200)));
        assert!(plan.iter().enumerate().all(|(i, p)| p.index == i));
        assert!(workload().plan(0.0, Duration::from_secs(10)).is_empty());
    }

    #[test]
    fn classes_follow_the_mix_and_have_their_shape() {
        let w = workload();
        let mut counts = [0usize; 3];
        for i in 0..3000 {
            let (class, messages) = w.prompt(i);
            assert_eq!(messages.last().map(|m| m.role), Some(Role::User));
            match class {
                Class::Short => {
                    counts[0] += 1;
                    assert_eq!(messages.len(), 1);
                }
                Class::Long => {
                    counts[1] += 1;
                    let words = messages[0].text.split_whitespace().count();
                    assert!((880..=1840).contains(&words), "{words}");
                }
                Class::MultiTurn => {
                    counts[2] += 1;
                    assert_eq!(messages.len(), 5);
                    assert_eq!(messages[1].role, Role::Assistant);
                }
            }
        }
        assert!((1950..2250).contains(&counts[0]), "{counts:?}");
        assert!((500..700).contains(&counts[1]), "{counts:?}");
        assert!((220..380).contains(&counts[2]), "{counts:?}");
        let only_long: Mix = "long:1".parse().unwrap_or_default();
        let w = Workload {
            mix: only_long,
            ..workload()
        };
        assert!((0..50).all(|i| w.prompt(i).0 == Class::Long));
    }

    #[test]
    fn mix_flags_parse_and_refuse() {
        let m: Mix = "short:1, long:2,multi:0".parse().unwrap_or_default();
        assert_eq!((m.short, m.long, m.multi), (1.0, 2.0, 0.0));
        assert_eq!(
            Mix::default().to_string().parse::<Mix>(),
            Ok(Mix::default())
        );
        for bad in ["short", "short:x", "tiny:1", "short:-1", "short:0", ""] {
            assert!(bad.parse::<Mix>().is_err(), "{bad}");
        }
    }
}
