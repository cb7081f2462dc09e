import Foundation

@testable import QueueData

/// The independent reader of the export tests: Python's `csv` and `json` modules read an
/// export back and compare it with the expected records, which the tests build from the
/// objects' typed properties (not from the exporter's code) and write with `JSONSerialization`.
enum ExportChecker {
    /// A field's kind as the checker compares it.
    static func kind(of field: ExportField) -> String {
        switch field.kind {
        case .objectID: return "id"
        case .toOne: return "ref"
        case .toMany: return "refs"
        case .attribute(let type, _):
            switch type {
            case .boolean: return "bool"
            case .integer16, .integer32, .integer64: return "int"
            case .double: return "float"
            case .float: return "float32"
            case .decimal: return "decimal"
            case .transformable: return "json"
            default: return "text"
            }
        }
    }

    /// Checks `export` (in `format`: csv, json or jsonl) against `records` (one array of
    /// JSON-compatible values per record, in the order of `fields`).
    ///
    /// - Returns: The problems Python found; empty when the export equals the records.
    static func problems(
        format: String,
        export: URL,
        fields: [ExportField],
        records: [[Any]],
        in directory: TemporaryDirectory
    ) throws -> [String] {
        let expected: [String: Any] = [
            "fields": fields.map { ["name": $0.name, "kind": kind(of: $0)] },
            "records": records,
        ]
        let expectedURL = directory.file("expected-\(UUID().uuidString.prefix(6)).json")
        try JSONSerialization.data(withJSONObject: expected).write(to: expectedURL)
        let output = try runPython(script, [format, export.path, expectedURL.path])
        guard output.status == 0 else {
            return ["python3 failed (\(output.status)): \(output.standardError)"]
        }
        return output.standardOutput.split(separator: "\n").map(String.init).filter { $0 != "OK" }
    }

    /// Expected JSON-compatible value of a date: ISO 8601 with milliseconds, by Foundation.
    static func date(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Expected value of a double: the number, or the string JSON exports use for non-finite ones.
    static func double(_ value: Double) -> Any {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return value
    }

    static let script = #"""
        import csv, decimal, json, struct, sys, math

        def as_float32(value):
            return struct.unpack("<f", struct.pack("<f", float(value)))[0]

        fmt, export_path, expected_path = sys.argv[1:4]
        with open(expected_path, encoding="utf-8") as f:
            expected = json.load(f)
        fields = expected["fields"]
        records = expected["records"]
        names = [f["name"] for f in fields]
        problems = []

        def same_json(kind, got, want):
            if want is None:
                return got is None
            if kind == "float":
                if isinstance(want, str):
                    return got == want
                return isinstance(got, (int, decimal.Decimal)) and not isinstance(got, bool) and float(got) == float(want)
            if kind == "float32":
                # Written in Float's shortest form: the float32 nearest the text is the value.
                if isinstance(want, str):
                    return got == want
                return isinstance(got, (int, decimal.Decimal)) and not isinstance(got, bool) and as_float32(got) == float(want)
            if kind == "decimal":
                return isinstance(got, (int, decimal.Decimal)) and decimal.Decimal(got) == decimal.Decimal(want)
            if kind == "int":
                return isinstance(got, int) and not isinstance(got, bool) and got == want
            return got == want

        def same_text(kind, text, want):
            if want is None:
                return text == ""
            if kind == "bool":
                return text == ("true" if want else "false")
            if kind == "int":
                return int(text) == want
            if kind == "float":
                if isinstance(want, str):
                    return text == want
                return float(text) == float(want)
            if kind == "float32":
                if isinstance(want, str):
                    return text == want
                return as_float32(text) == float(want)
            if kind == "decimal":
                return decimal.Decimal(text) == decimal.Decimal(want)
            if kind == "json":
                return json.loads(text, parse_float=decimal.Decimal) == want
            if kind == "refs":
                return (text.split(" ") if text else []) == want
            return text == want

        def check_objects(objects):
            if len(objects) != len(records):
                problems.append(f"{len(objects)} records, expected {len(records)}")
                return
            for index, (obj, want) in enumerate(zip(objects, records)):
                if list(obj.keys()) != names:
                    problems.append(f"record {index}: keys {list(obj.keys())}, expected {names}")
                    continue
                for field, value in zip(fields, want):
                    got = obj[field["name"]]
                    if not same_json(field["kind"], got, value):
                        problems.append(f"record {index} {field['name']}: {got!r}, expected {value!r}")

        if fmt == "csv":
            with open(export_path, newline="", encoding="utf-8") as f:
                rows = list(csv.reader(f))
            if not rows or rows[0] != names:
                problems.append(f"header {rows[0] if rows else None}, expected {names}")
            body = rows[1:]
            if len(body) != len(records):
                problems.append(f"{len(body)} rows, expected {len(records)}")
            for index, (row, want) in enumerate(zip(body, records)):
                if len(row) != len(fields):
                    problems.append(f"row {index}: {len(row)} fields, expected {len(fields)}: {row!r}")
                    continue
                for field, text, value in zip(fields, row, want):
                    try:
                        ok = same_text(field["kind"], text, value)
                    except Exception as error:
                        ok = False
                    if not ok:
                        problems.append(f"row {index} {field['name']}: {text!r}, expected {value!r}")
        elif fmt == "json":
            with open(export_path, encoding="utf-8") as f:
                check_objects(json.load(f, parse_float=decimal.Decimal))
        elif fmt == "jsonl":
            with open(export_path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            if lines[-1] != "":
                problems.append("the last line does not end with a line feed")
            check_objects([json.loads(line, parse_float=decimal.Decimal) for line in lines[:-1]])
        for problem in problems[:20]:
            print(problem)
        if not problems:
            print("OK")
        """#
}
