//! `RunAgentInput` decoding (`POST /agent`, a WebSocket input frame): any
//! bytes give an input or an error naming a path, and an input that
//! decodes re-encodes to JSON that decodes to the same input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire_protocol::decode_run_agent_input;

fuzz_target!(|data: &[u8]| {
    match decode_run_agent_input(data) {
        Ok(input) => {
            let json = serde_json::to_vec(&input).expect("a decoded input encodes");
            let again = decode_run_agent_input(&json).expect("its encoding decodes");
            assert_eq!(again, input, "the input survives a round trip");
        }
        Err(err) => {
            // The path is shown to the client: it must stay short and never
            // grow with the input beyond the nesting it names.
            assert!(err.path().len() <= data.len() + 64, "path {:?}", err.path());
        }
    }
});
