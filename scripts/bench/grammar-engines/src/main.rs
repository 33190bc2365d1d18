//! llguidance vs outlines-core on one vocabulary: grammar compile time and
//! per-token mask time while following a valid answer for each schema in
//! `schemas/all.json`, then whether each engine refuses instances the
//! schema forbids (and accepts a deep recursive one).

use std::sync::Arc;
use std::time::Instant;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use toktrie::{ApproximateTokEnv, TokRxInfo, TokTrie, TokenizerEnv};

fn main() {
    let tj: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap()).unwrap();
    let words = llguidance::token_bytes_from_tokenizer_json(&tj).unwrap();
    let eos = 2u32; // <|im_end|> in SmolLM2
    let info = TokRxInfo::new(words.len() as u32, eos);
    let trie = TokTrie::from(&info, &words);
    let env: toktrie::TokEnv = Arc::new(ApproximateTokEnv::new(trie));
    let schemas: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/all.json")).unwrap()).unwrap();
    let insts: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/instances.json")).unwrap()).unwrap();
    let t = Instant::now();
    let mut factory = ParserFactory::new_simple(&env).unwrap();
    factory.quiet();
    println!("llguidance factory (slicer) {:.1} ms", t.elapsed().as_secs_f64()*1e3);
    // outlines vocabulary
    let mut vocab = outlines_core::prelude::Vocabulary::new(eos);
    for (i, w) in words.iter().enumerate() {
        if i as u32 == eos || w.is_empty() || w[0] == 0xff { continue; }
        let _ = vocab.try_insert(w.clone(), i as u32);
    }
    for (k, (schema, inst)) in schemas.iter().zip(&insts).enumerate() {
        let text = serde_json::to_string(inst).unwrap();
        let toks = env.tokenize(&text);
        // llguidance
        let t = Instant::now();
        let parser = factory.create_parser(TopLevelGrammar::from_json_schema(schema.clone()));
        let mut m = Matcher::new(parser);
        let compile = t.elapsed();
        let mut mask_ns = Vec::new();
        for &tok in &toks {
            let t = Instant::now();
            let mask = m.compute_mask().unwrap();
            mask_ns.push(t.elapsed().as_nanos() as f64);
            assert!(mask.is_allowed(tok), "llg rejects its own instance at {k}");
            m.consume_token(tok).unwrap();
        }
        let t = Instant::now();
        let mask = m.compute_mask_or_eos().unwrap();
        mask_ns.push(t.elapsed().as_nanos() as f64);
        assert!(mask.is_allowed(eos));
        let mean = mask_ns.iter().sum::<f64>() / mask_ns.len() as f64;
        let mut s = mask_ns.clone(); s.sort_by(|a,b| a.partial_cmp(b).unwrap());
        println!("schema {k}: llguidance compile {:.2} ms, mask mean {:.1} us p50 {:.1} max {:.1} over {} tokens", compile.as_secs_f64()*1e3, mean/1e3, s[s.len()/2]/1e3, s[s.len()-1]/1e3, s.len());
        // outlines
        let t = Instant::now();
        let re = outlines_core::json_schema::regex_from_value(schema, None, None);
        let re = match re { Ok(r) => r, Err(e) => { println!("schema {k}: outlines regex error {e}"); continue; } };
        let idx = match outlines_core::prelude::Index::new(&re, &vocab) { Ok(i) => i, Err(e) => { println!("schema {k}: outlines index error {e}"); continue; } };
        let compile = t.elapsed();
        let mut state = idx.initial_state();
        let mut ns = Vec::new();
        let mut ok = true;
        for &tok in &toks {
            let t = Instant::now();
            let mut bits = vec![0u32; (words.len()+31)/32];
            if let Some(it) = idx.allowed_tokens_iter(&state) { for &a in it { bits[(a/32) as usize] |= 1 << (a%32); } }
            ns.push(t.elapsed().as_nanos() as f64);
            match idx.next_state(&state, &tok) { Some(s) => state = s, None => { ok = false; break; } }
        }
        let mean = ns.iter().sum::<f64>() / ns.len().max(1) as f64;
        println!("schema {k}: outlines compile {:.1} ms ({} states), mask mean {:.1} us, follows instance: {ok}", compile.as_secs_f64()*1e3, idx.transitions().len(), mean/1e3);
    }

    // coverage: does each engine refuse an instance the schema forbids?
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (schemas[0].clone(), r#"{"name":"A","age":999,"address":{"city":"B","country":"C"}}"#),
        (schemas[4].clone(), r#"{"name":"A","price":0,"in_stock":true}"#),
        (schemas[1].clone(), r#"{"items":[]}"#),
        (serde_json::json!({"type":"object","properties":{"v":{"type":"number","multipleOf":0.5}},"required":["v"]}), r#"{"v":0.3}"#),
        (serde_json::json!({"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["kids"],"additionalProperties":false}},"$ref":"#/$defs/n"}), r#"{"kids":[{"kids":[{"kids":[{"kids":[{"kids":[]}]}]}]}]}"#),
        (serde_json::json!({"type":"object","properties":{"s":{"type":"string","pattern":"^[A-Z]{3}$"}},"required":["s"]}), r#"{"s":"abc"}"#),
        (serde_json::json!({"type":"object","properties":{"s":{"type":"string","format":"date"}},"required":["s"]}), r#"{"s":"yesterday"}"#),
        (serde_json::json!({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]}), r#""abc""#),
    ];
    for (i, (schema, text)) in cases.iter().enumerate() {
        let toks = env.tokenize(text);
        let parser = factory.create_parser(TopLevelGrammar::from_json_schema(schema.clone()));
        let llg = match parser {
            Err(e) => format!("unsupported: {}", e.to_string().chars().take(80).collect::<String>()),
            Ok(p) => { let mut m = Matcher::new(Ok(p)); let n = m.try_consume_tokens(&toks).unwrap_or(0); let acc = n == toks.len() && m.is_accepting().unwrap_or(false); if acc {"ACCEPTS (wrong)".into()} else {"refuses".into()} }
        };
        let out = match outlines_core::json_schema::regex_from_value(schema, None, Some(3)).map_err(|e| e.to_string()).and_then(|re| outlines_core::prelude::Index::new(&re, &vocab).map_err(|e| e.to_string())) {
            Err(e) => format!("unsupported: {}", e.chars().take(80).collect::<String>()),
            Ok(idx) => { let mut st = idx.initial_state(); let mut ok = true; for t in &toks { match idx.next_state(&st, t) { Some(s) => st = s, None => { ok = false; break; } } } if ok && idx.is_final_state(&st) {"ACCEPTS (wrong)".into()} else {"refuses".into()} }
        };
        println!("case {i}: llguidance {llg}; outlines {out}");
    }
}
