"""JSON text (ffi.json.Parse / ffi.json.Stringify) and JSON graphs (tvm_ffi.serialization,
ffi.ToJSONGraph / ffi.FromJSONGraph): the exact text, values and errors of the official library.

Every expected string below was observed on the official library (apache-tvm-ffi 0.1.15.post2).
"""

import math

import pytest
import tvm_ffi
from tvm_ffi import serialization

from conftest import LIB

parse = tvm_ffi.get_global_func("ffi.json.Parse")
stringify = tvm_ffi.get_global_func("ffi.json.Stringify")
to_graph = tvm_ffi.get_global_func("ffi.ToJSONGraph")
from_graph = tvm_ffi.get_global_func("ffi.FromJSONGraph")


def error_of(function, *args):
    with pytest.raises(Exception) as info:
        function(*args)
    return type(info.value).__name__, str(info.value)


# ffi.json.Parse


def test_parse_values_and_their_types():
    value = parse('{"a": [1, 2.5, "x", null, true, false], "b": {}}')
    assert isinstance(value, tvm_ffi.Map)
    assert isinstance(value["a"], tvm_ffi.Array)
    assert list(value["a"]) == [1, 2.5, "x", None, True, False]
    assert isinstance(value["a"][0], int) and isinstance(value["a"][1], float)
    assert value["a"][4] is True
    assert len(value["b"]) == 0
    assert repr(parse("[[], {}, [[1]]]")) == "((), {}, ((1,),))"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", 1),
        ("-0", 0),
        ("+1", 1),
        ("01", 1),
        (".5", 0.5),
        ("5.", 5.0),
        ("1E+5", 100000.0),
        ("9223372036854775807", 9223372036854775807),
        ("-9223372036854775808", -9223372036854775808),
        ("9223372036854775808", 9.223372036854776e18),
        ("99999999999999999999", 1e20),
        ("2.2250738585072014e-308", 2.2250738585072014e-308),
        ("0e-400", 0.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("\r\n\t 1 \r\n", 1),
    ],
)
def test_parse_numbers(text, expected):
    value = parse(text)
    assert value == expected
    assert type(value) is type(expected)


def test_parse_subnormals_only_when_exact():
    import decimal

    exact = str(decimal.Decimal(3 * 2**-1074))
    assert parse(exact) == 1.5e-323
    assert error_of(parse, "1.5e-323") == ("ValueError", "Expecting value: line 1 column 1 (char 0)")


def test_parse_nan():
    assert math.isnan(parse("NaN"))


def test_parse_strings():
    assert parse('"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\"\\\\"') == "é😀/\b\f\n\r\t\"\\"
    assert parse('"\\u0000"') == "\x00"
    assert parse('"é"') == "é"
    # Short strings without escapes are inline (Python str); escaped ones are String objects.
    assert type(parse('"ab"')) is str
    assert type(parse('"a\\n"')) is tvm_ffi.core.String


def test_parse_duplicate_keys_keep_the_last_value():
    assert repr(parse('{"a":1,"b":2,"a":3}')) == '{"a": 3, "b": 2}'
    assert repr(parse('{"b":1,"a":2,"c":3,"d":4,"e":5,"f":6}')) == '{"b": 1, "a": 2, "c": 3, "d": 4, "e": 5, "f": 6}'


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ("   ", "Expecting value: line 1 column 4 (char 3)"),
        ("-", "Expecting value: line 1 column 1 (char 0)"),
        ("1-2", "Expecting value: line 1 column 1 (char 0)"),
        ("1e400", "Expecting value: line 1 column 1 (char 0)"),
        ("1e-400", "Expecting value: line 1 column 1 (char 0)"),
        ("4e-320", "Expecting value: line 1 column 1 (char 0)"),
        ("Inf", "Expecting value: line 1 column 1 (char 0)"),
        ("tru", "Expecting value: line 1 column 1 (char 0)"),
        ("truex", "Extra data: line 1 column 5 (char 4)"),
        ("null null", "Extra data: line 1 column 6 (char 5)"),
        ("0x10", "Extra data: line 1 column 2 (char 1)"),
        (" \n  [1,\n 2,]", "Expecting value: line 3 column 4 (char 11)"),
        ("[1,\n\n  \n  @]", "Expecting value: line 4 column 3 (char 10)"),
        ("[1,", "Syntax error near: line 1 column 4 (char 3)"),
        ("[-]", "Expecting value: line 1 column 2 (char 1)"),
        ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
        ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('{"a"', "Expecting ':' delimiter: line 1 column 5 (char 4)"),
        ('{"a":1', "Expecting ',' delimiter: line 1 column 7 (char 6)"),
        ('{"a":1,', "Syntax error near: line 1 column 8 (char 7)"),
        ('{"a":1,}', "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"),
        ("{1:2}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('"abc', "Unterminated string starting at: line 1 column 1 (char 0)"),
        ('"a\\qb"', "Invalid \\escape: line 1 column 4 (char 3)"),
        ('"a\\', "Invalid \\escape: line 1 column 4 (char 3)"),
        ('"\\u12"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
        ('"\\ude00"', "Invalid surrogate pair of \\uXXXX escapes: line 1 column 3 (char 2)"),
        ('"\\ud83dx"', "Invalid surrogate pair of \\uXXXX escapes: line 1 column 3 (char 2)"),
        ('"\\ud83d\\u0041"', "Invalid surrogate pair of \\uXXXX escapes: line 1 column 10 (char 9)"),
        ('"\\ud83d\\uzz"', "Invalid \\uXXXX escape: line 1 column 10 (char 9)"),
        ('"a\nb"', "Invalid control character at: line 1 column 3 (char 2)"),
        ("\ufeff1", "Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_parse_errors_name_the_position(text, message):
    assert error_of(parse, text) == ("ValueError", message)


def test_parse_argument_errors():
    assert error_of(parse, b"1") == (
        "TypeError",
        "Mismatched type on argument #0 when calling: `ffi.json.Parse(0: str) -> Any`. "
        "Expected `str` but got `ffi.SmallBytes`",
    )
    assert error_of(parse) == (
        "TypeError",
        "Mismatched number of arguments when calling: `ffi.json.Parse(0: str) -> Any`. "
        "Expected 1 but got 0 arguments",
    )


def test_parse_deep_nesting():
    value = parse("[" * 900 + "]" * 900)
    for _ in range(899):
        value = value[0]
    assert len(value) == 0


@pytest.mark.skipif(LIB != "pactum", reason="the official runtime recurses without bound and crashes")
def test_hostile_nesting_is_an_error_on_pactum():
    assert error_of(parse, "[" * 200000) == ("ValueError", "Nesting deeper than 1000 levels at: line 1 column 1001 (char 1000)")
    deep = [1]
    for _ in range(1000):
        deep = [deep]
    assert error_of(stringify, deep, None) == ("ValueError", "Nesting deeper than 1000 levels")
    assert error_of(serialization.to_json_graph_str, deep) == ("ValueError", "Invalid JSON Object Graph: nesting deeper than 1000 levels")
    cyclic = '{"root_index":0,"nodes":[{"type":"ffi.Array","data":[1]},{"type":"ffi.List","data":[0]}]}'
    assert error_of(serialization.from_json_graph_str, cyclic) == ("ValueError", "Invalid JSON Object Graph: node 0 refers to itself")
    chain = ",".join('{"type":"ffi.Array","data":[%d]}' % (i + 1) for i in range(1500)) + ',{"type":"None"}'
    assert error_of(serialization.from_json_graph_str, '{"root_index":0,"nodes":[%s]}' % chain) == (
        "ValueError",
        "Invalid JSON Object Graph: nesting deeper than 1000 levels",
    )


# ffi.json.Stringify


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (1, "1"),
        (-(2**63), "-9223372036854775808"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (0.1, "0.10000000000000001"),
        (1e20, "1e+20"),
        (1e16, "10000000000000000"),
        (9007199254740991.0, "9007199254740991.0"),
        (2.0**53, "9007199254740992"),
        (1e-7, "9.9999999999999995e-08"),
        (123456789.123, "123456789.123"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
        ('a/b"\\\x01\x7f\x1f\té\x00', '"a\\/b\\"\\\\\\u0001\\u007f\\u001f\\té\\u0000"'),
        ([1, [2, 3]], "[1,[2,3]]"),
        ({"a": 1, "b": [1, 2]}, '{"a":1,"b":[1,2]}'),
        ((), "[]"),
        ({}, "{}"),
        (tvm_ffi.List([tvm_ffi.List([1]), 2]), "[[1],2]"),
    ],
)
def test_stringify_text(value, text):
    out = stringify(value, None)
    assert out == text
    assert type(out) is tvm_ffi.core.String


def test_stringify_indent():
    assert stringify([1, [2, 3]], 2) == "[\n  1,\n  [\n    2,\n    3\n  ]\n]"
    assert stringify({"a": 1, "b": [1, 2]}, 2) == '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}'
    assert stringify({"k": 1.0, "e": {"x": []}}, 4) == '{\n    "k": 1.0,\n    "e": {\n        "x": [\n        ]\n    }\n}'
    assert stringify((), 2) == "[\n]"
    assert stringify({}, 2) == "{\n}"
    assert stringify([1, [2]], 0) == "[1,[2]]"
    assert stringify([1], True) == "[\n 1\n]"
    assert stringify([1, [2]], -2) == "[\n1,\n[\n2\n]\n]"


def test_stringify_map_order_follows_the_map():
    keys = "abcdefghi"
    assert stringify({k: i for i, k in enumerate(keys)}, None) == '{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8}'


def test_stringify_errors():
    signature = "`ffi.json.Stringify(0: Any, 1: Optional<int>) -> str`"
    assert error_of(stringify, tvm_ffi.Dict({"a": 1}), None) == ("ValueError", "Unsupported type: `ffi.Dict`")
    assert error_of(stringify, b"x", None) == ("ValueError", "Unsupported type: `ffi.SmallBytes`")
    assert error_of(stringify, b"x" * 20, None) == ("ValueError", "Unsupported type: `ffi.Bytes`")
    assert error_of(stringify, tvm_ffi.Shape((1, 2)), None) == ("ValueError", "Unsupported type: `ffi.Shape`")
    assert error_of(stringify, tvm_ffi.dtype("float32"), None) == ("ValueError", "Unsupported type: `DataType`")
    assert error_of(stringify, tvm_ffi.Device("cpu", 0), None) == ("ValueError", "Unsupported type: `Device`")
    assert error_of(stringify, {1: 2}, None) == ("ValueError", "Expect key to be string, got `int`")
    cyclic = tvm_ffi.List([1])
    cyclic.append(cyclic)
    assert error_of(stringify, cyclic, None) == ("ValueError", "Cycle detected: List contains itself")
    assert error_of(stringify, 1) == (
        "TypeError",
        f"Mismatched number of arguments when calling: {signature}. Expected 2 but got 1 arguments",
    )
    assert error_of(stringify, [1], "x") == (
        "TypeError",
        f"Mismatched type on argument #1 when calling: {signature}. Expected `Optional<int>` but got `ffi.SmallStr`",
    )
    assert error_of(stringify, [1], 2.5) == (
        "TypeError",
        f"Mismatched type on argument #1 when calling: {signature}. Expected `Optional<int>` but got `float`",
    )


def test_stringify_parse_round_trip():
    value = {"name": "x", "values": [1, 2.5, None, True, "é", {"deep": [[]]}], "n": -3}
    text = stringify(value, None)
    assert stringify(parse(text), None) == text
    assert stringify(parse(stringify(value, 3)), None) == text


def test_global_metadata():
    metadata = tvm_ffi.get_global_func("ffi.GetGlobalFuncMetadata")
    assert metadata("ffi.json.Stringify") == (
        '{"type_schema":"{\\"type\\":\\"ffi.Function\\",\\"named_args\\":{\\"return\\":[{\\"type\\":\\"ffi.String\\"}],'
        '\\"params\\":[{\\"type\\":\\"Any\\"},{\\"type\\":\\"Optional\\",\\"args\\":[{\\"type\\":\\"int\\"}]}]}}"}'
    )
    assert metadata("ffi.FromJSONGraphString") == (
        '{"type_schema":"{\\"type\\":\\"ffi.Function\\",\\"named_args\\":{\\"return\\":[{\\"type\\":\\"Any\\"}],'
        '\\"params\\":[{\\"type\\":\\"ffi.String\\"}]}}"}'
    )


# JSON graphs


def graph(nodes, root=0):
    return '{"root_index":%d,"nodes":[%s]}' % (root, ",".join(nodes))


@pytest.mark.parametrize(
    "value, text",
    [
        (None, graph(['{"type":"None"}'])),
        (True, graph(['{"type":"bool","data":true}'])),
        (1, graph(['{"type":"int","data":1}'])),
        (1.5, graph(['{"type":"float","data":1.5}'])),
        (2.0, graph(['{"type":"float","data":2.0}'])),
        ("abc", graph(['{"type":"ffi.String","data":"abc"}'])),
        ("a" * 20, graph(['{"type":"ffi.String","data":"aaaaaaaaaaaaaaaaaaaa"}'])),
        (b"hello", graph(['{"type":"ffi.Bytes","data":"aGVsbG8="}'])),
        (b"", graph(['{"type":"ffi.Bytes","data":""}'])),
        (b"\x00\xff\x01", graph(['{"type":"ffi.Bytes","data":"AP8B"}'])),
        (b"abcd", graph(['{"type":"ffi.Bytes","data":"YWJjZA=="}'])),
        (tvm_ffi.dtype("float32"), graph(['{"type":"DataType","data":"float32"}'])),
        (tvm_ffi.dtype("int8x4"), graph(['{"type":"DataType","data":"int8x4"}'])),
        (tvm_ffi.Device("cuda", 3), graph(['{"type":"Device","data":[2,3]}'])),
        (tvm_ffi.Shape((1, 2, 3)), graph(['{"type":"ffi.Shape","data":[1,2,3]}'])),
        (tvm_ffi.Shape(()), graph(['{"type":"ffi.Shape","data":[]}'])),
    ],
)
def test_graph_of_a_leaf(value, text):
    assert serialization.to_json_graph_str(value) == text
    loaded = serialization.from_json_graph_str(text)
    if isinstance(value, tvm_ffi.Shape):
        assert tuple(loaded) == tuple(value)
    else:
        assert loaded == value
        assert type(loaded) is type(value) or isinstance(value, str)


def test_graph_shares_equal_values():
    text = serialization.to_json_graph_str([1, 1, "x", "x", None, None, 1.0, True])
    assert text == graph(
        [
            '{"type":"int","data":1}',
            '{"type":"ffi.String","data":"x"}',
            '{"type":"None"}',
            '{"type":"float","data":1.0}',
            '{"type":"bool","data":true}',
            '{"type":"ffi.Array","data":[0,0,1,1,2,2,3,4]}',
        ],
        root=5,
    )
    loaded = serialization.from_json_graph_str(text)
    assert repr(loaded) == '(1, 1, "x", "x", None, None, 1, True)'
    assert type(loaded[6]) is float and type(loaded[7]) is bool


def test_graph_shares_the_same_object():
    inner = tvm_ffi.convert([1, 2])
    text = serialization.to_json_graph_str([inner, inner, tvm_ffi.convert([1, 2])])
    assert text == graph(
        [
            '{"type":"int","data":1}',
            '{"type":"int","data":2}',
            '{"type":"ffi.Array","data":[0,1]}',
            '{"type":"ffi.Array","data":[0,1]}',
            '{"type":"ffi.Array","data":[2,2,3]}',
        ],
        root=4,
    )
    loaded = serialization.from_json_graph_str(text)
    assert loaded[0].same_as(loaded[1])
    assert not loaded[0].same_as(loaded[2])


def test_graph_of_containers():
    assert serialization.to_json_graph_str(tvm_ffi.List([1, [2]])) == graph(
        [
            '{"type":"int","data":1}',
            '{"type":"int","data":2}',
            '{"type":"ffi.Array","data":[1]}',
            '{"type":"ffi.List","data":[0,2]}',
        ],
        root=3,
    )
    assert serialization.to_json_graph_str({"a": 1, "b": "a"}) == graph(
        [
            '{"type":"ffi.String","data":"a"}',
            '{"type":"int","data":1}',
            '{"type":"ffi.String","data":"b"}',
            '{"type":"ffi.Map","data":[0,1,2,0]}',
        ],
        root=3,
    )
    text = serialization.to_json_graph_str(tvm_ffi.Dict({"a": [1]}))
    assert text == graph(
        [
            '{"type":"ffi.String","data":"a"}',
            '{"type":"int","data":1}',
            '{"type":"ffi.Array","data":[1]}',
            '{"type":"ffi.Dict","data":[0,2]}',
        ],
        root=3,
    )
    loaded = serialization.from_json_graph_str(text)
    assert isinstance(loaded, tvm_ffi.Dict) and repr(loaded) == '{"a": (1,)}'
    big = {"k%d" % i: i for i in range(6)}
    text = serialization.to_json_graph_str(big)
    assert text.endswith('{"type":"ffi.Map","data":[0,1,2,3,4,5,6,7,8,9,10,11]}]}')
    assert dict(serialization.from_json_graph_str(text)) == big


def test_graph_special_floats():
    text = serialization.to_json_graph_str([0.0, -0.0, math.nan, math.inf])
    assert text == graph(
        [
            '{"type":"float","data":0.0}',
            '{"type":"float","data":-0.0}',
            '{"type":"float","data":NaN}',
            '{"type":"float","data":Infinity}',
            '{"type":"ffi.Array","data":[0,1,2,3]}',
        ],
        root=4,
    )
    loaded = serialization.from_json_graph_str(text)
    assert math.copysign(1, loaded[1]) == -1 and math.isnan(loaded[2]) and loaded[3] == math.inf


def test_graph_metadata_and_the_object_form():
    text = serialization.to_json_graph_str([1], {"v": 1, "name": "x"})
    assert text == '{"root_index":1,"nodes":[{"type":"int","data":1},{"type":"ffi.Array","data":[0]}],"metadata":{"v":1,"name":"x"}}'
    assert list(serialization.from_json_graph_str(text)) == [1]
    as_map = to_graph([1], None)
    assert repr(as_map) == '{"root_index": 1, "nodes": ({"type": "int", "data": 1}, {"type": "ffi.Array", "data": (0,)})}'
    assert list(from_graph(as_map)) == [1]
    assert from_graph({"root_index": 0, "nodes": [tvm_ffi.Dict({"type": "int", "data": 4})]}) == 4


def test_graph_loads_literal_text():
    loaded = serialization.from_json_graph_str(
        '{"root_index":1,"nodes":[{"type":"None"},{"type":"ffi.Array","data":[0,0,2]},{"type":"None"}]}'
    )
    assert repr(loaded) == "(None, None, None)"
    # Lenient like the official reader: an int for a bool or float, a bool for an int,
    # extra keys and metadata ignored, device ids wrapped to C ints.
    assert from_graph({"root_index": 0, "nodes": [{"type": "bool", "data": 3}]}) is True
    assert type(from_graph({"root_index": 0, "nodes": [{"type": "float", "data": 3}]})) is float
    assert from_graph({"root_index": 0, "nodes": [{"type": "int", "data": True}]}) == 1
    assert serialization.from_json_graph_str('{"root_index":0,"nodes":[{"type":"int","data":1,"extra":2}],"metadata":{"x":1}}') == 1
    assert repr(serialization.from_json_graph_str(graph(['{"type":"Device","data":[1,1099511627776]}']))) == "device(type='cpu', index=0)"
    assert serialization.from_json_graph_str(graph(['{"type":"ffi.Bytes","data":"a=bc"}'])) == b"h\x06\xdc"
    assert serialization.from_json_graph_str(graph(['{"type":"ffi.Bytes","data":"YQ=A"}'])) == b"a\x00"
    # A later duplicate key replaces the value in place.
    two_ints = '{"type":"int","data":7},{"type":"int","data":8}'
    assert repr(serialization.from_json_graph_str(graph(['{"type":"ffi.Map","data":[1,2,1,1]}', two_ints]))) == "{7: 7}"


@pytest.mark.parametrize(
    "text, kind, message",
    [
        ("[]", "ValueError", "Invalid JSON Object Graph, expected an object"),
        ("{}", "ValueError", "Invalid JSON Object Graph, expected `root_index` integer field"),
        ('{"root_index":true,"nodes":[]}', "ValueError", "Invalid JSON Object Graph, expected `root_index` integer field"),
        ('{"root_index":1.0,"nodes":[]}', "ValueError", "Invalid JSON Object Graph, expected `root_index` integer field"),
        ('{"root_index":0}', "ValueError", "Invalid JSON Object Graph, expected `nodes` array field"),
        ('{"root_index":0,"nodes":{}}', "ValueError", "Invalid JSON Object Graph, expected `nodes` array field"),
        ('{"root_index":0,"nodes":[]}', "ValueError", "Invalid JSON Object Graph: invalid node index 0"),
        ('{"root_index":-1,"nodes":[{"type":"None"}]}', "ValueError", "Invalid JSON Object Graph: invalid node index -1"),
        (graph(["1"]), "TypeError", "Cannot convert from type `int` to `Map<Any, Any>`"),
        (graph(["{}"]), "KeyError", "'key is not in Map'"),
        (graph(['{"type":1}']), "TypeError", "Cannot convert from type `int` to `str`"),
        (graph(['{"type":"nope"}']), "RuntimeError", "Check failed: (it != type_key2index_.end()) is false: Cannot find type `nope`"),
        (graph(['{"type":"int"}']), "KeyError", "'key is not in Map'"),
        (graph(['{"type":"int","data":"x"}']), "TypeError", "Cannot convert from type `ffi.SmallStr` to `int`"),
        (graph(['{"type":"int","data":1.5}']), "TypeError", "Cannot convert from type `float` to `int`"),
        (graph(['{"type":"float","data":null}']), "TypeError", "Cannot convert from type `None` to `float`"),
        (graph(['{"type":"ffi.String","data":3}']), "TypeError", "Cannot convert from type `int` to `str`"),
        (graph(['{"type":"ffi.Bytes","data":"abc"}']), "RuntimeError", "Check failed: (bytes.size % 4 == 0) is false: invalid base64 encoding"),
        (graph(['{"type":"DataType","data":"floaty"}']), "ValueError", "unknown dtype `floaty`"),
        (graph(['{"type":"Device","data":[1]}']), "ValueError", "Invalid JSON Object Graph: Device data must be an array of [device_type, device_id], got 1 element(s)"),
        (graph(['{"type":"Device","data":[1,"x"]}']), "TypeError", "Cannot convert from type `Array[index 1: ffi.SmallStr]` to `Array<int>`"),
        (graph(['{"type":"Device","data":"x"}']), "TypeError", "Cannot convert from type `ffi.SmallStr` to `Array<int>`"),
        (graph(['{"type":"ffi.Shape","data":[1,2.5]}']), "TypeError", "Cannot convert from type `Array[index 1: float]` to `Array<int>`"),
        (graph(['{"type":"ffi.Array","data":[1]}']), "ValueError", "Invalid JSON Object Graph: invalid node index 1"),
        (graph(['{"type":"ffi.Array","data":["x"]}']), "TypeError", "Cannot convert from type `ffi.SmallStr` to `int`"),
        (graph(['{"type":"ffi.Array","data":5}']), "TypeError", "Cannot convert from type `int` to `Array<Any>`"),
        (graph(['{"type":"ffi.Map","data":[0]}']), "ValueError", "Invalid JSON Object Graph: Map/Dict data must contain an even number of [key, value] entries, got 1"),
        (graph(['{"type":"ffi.Map","data":[5,6]}']), "ValueError", "Invalid JSON Object Graph: invalid node index 6"),
        (graph(['{"type":"ffi.Map","data":[5,"x"]}']), "TypeError", "Cannot convert from type `ffi.SmallStr` to `int`"),
        (graph(['{"type":"ffi.Function","data":{}}']), "RuntimeError", "Type `ffi.Function` does not support reflection creation (no native creator or __ffi_new__ type attr)"),
        (graph(['{"type":"ffi.Tensor"}']), "KeyError", "'key is not in Map'"),
        ('{"root_index":0,"nodes":[{"type":"int","data":1}], ', "ValueError", "Syntax error near: line 1 column 52 (char 51)"),
    ],
)
def test_graph_load_errors(text, kind, message):
    assert error_of(serialization.from_json_graph_str, text) == (kind, message)


def test_graph_load_argument_shapes():
    assert error_of(from_graph, [1]) == ("ValueError", "Invalid JSON Object Graph, expected an object")
    assert error_of(from_graph, tvm_ffi.Dict({"root_index": 0, "nodes": []})) == ("ValueError", "Invalid JSON Object Graph, expected an object")
    assert error_of(from_graph, {"root_index": 0, "nodes": tvm_ffi.List([])}) == ("ValueError", "Invalid JSON Object Graph, expected `nodes` array field")


def test_graph_save_errors():
    assert error_of(serialization.to_json_graph_str, tvm_ffi.get_global_func("ffi.Array")) == (
        "TypeError",
        "Type `ffi.Function` does not support ToJSONGraph (no native creator or __ffi_new__ type attr)",
    )
    assert error_of(serialization.to_json_graph_str, [1], tvm_ffi.Dict({})) == ("ValueError", "Unsupported type: `ffi.Dict`")
    cyclic = tvm_ffi.List([1])
    cyclic.append(cyclic)
    assert error_of(serialization.to_json_graph_str, cyclic) == ("ValueError", "Cycle detected during serialization: a List contains itself")
    cyclic = tvm_ffi.Dict({})
    cyclic["x"] = cyclic
    assert error_of(serialization.to_json_graph_str, cyclic) == ("ValueError", "Cycle detected during serialization: a Dict contains itself")


def test_graph_round_trips_nested_values():
    value = tvm_ffi.convert(
        {
            "ints": [1, 2, 3],
            "floats": [0.1, 1e300, -2.5],
            "strings": ["", "é", "a" * 50],
            "bytes": b"\x00\x01binary\xff",
            "dtype": tvm_ffi.dtype("bfloat16"),
            "device": tvm_ffi.Device("cuda", 1),
            "shape": tvm_ffi.Shape((4, 5)),
            "list": tvm_ffi.List([None, True]),
            "dict": tvm_ffi.Dict({"x": [1]}),
        }
    )
    text = serialization.to_json_graph_str(value)
    loaded = serialization.from_json_graph_str(text)
    assert serialization.to_json_graph_str(loaded) == text
    assert repr(loaded) == repr(value)


# Reflected objects (the wheel's testing library)


def test_graph_of_reflected_objects():
    import tvm_ffi.testing as testing

    pair = testing.TestIntPair(1, 2)
    text = serialization.to_json_graph_str(pair)
    assert text == '{"root_index":0,"nodes":[{"type":"testing.TestIntPair","data":{"a":1,"b":2}}]}'
    loaded = serialization.from_json_graph_str(text)
    assert (loaded.a, loaded.b) == (1, 2)
    assert serialization.to_json_graph_str([pair, pair]) == (
        '{"root_index":1,"nodes":[{"type":"testing.TestIntPair","data":{"a":1,"b":2}},{"type":"ffi.Array","data":[0,0]}]}'
    )
    derived = testing.create_object(
        "testing.TestObjectDerived", v_i64=5, v_f64=2.5, v_str="hi", v_map={"a": 1}, v_array=[1, "x"]
    )
    text = serialization.to_json_graph_str(derived)
    assert text == (
        '{"root_index":6,"nodes":[{"type":"ffi.String","data":"hi"},{"type":"ffi.String","data":"a"},'
        '{"type":"int","data":1},{"type":"ffi.Map","data":[1,2]},{"type":"ffi.String","data":"x"},'
        '{"type":"ffi.Array","data":[2,4]},{"type":"testing.TestObjectDerived","data":'
        '{"v_i64":5,"v_f64":2.5,"v_str":0,"v_map":3,"v_array":5}}]}'
    )
    assert repr(serialization.from_json_graph_str(text)) == repr(derived)
    bad = '{"root_index":0,"nodes":[{"type":"testing.TestIntPair","data":%s}]}'
    assert error_of(serialization.from_json_graph_str, bad % '{"a":1}') == (
        "TypeError",
        "Required field `b` not set in type `testing.TestIntPair`",
    )
    assert error_of(serialization.from_json_graph_str, bad % '{"a":1,"b":"x"}') == (
        "TypeError",
        "Cannot convert from type `ffi.SmallStr` to `int`",
    )
    assert error_of(serialization.from_json_graph_str, bad % "[1]") == (
        "TypeError",
        "Cannot convert from type `ffi.Array` to `Map<Any, Any>`",
    )
    assert error_of(serialization.to_json_graph_str, testing.make_unregistered_object()) == (
        "TypeError",
        "Type `testing.TestUnregisteredObject` does not support ToJSONGraph (no native creator or __ffi_new__ type attr)",
    )


def test_graph_of_enums():
    import tvm_ffi.testing as testing

    int_enum, str_enum = testing._TestCxxIntEnum, testing._TestCxxStrEnum
    holder = testing._TestCxxEnumHolder(int_enum.high, str_enum.mul)
    text = serialization.to_json_graph_str(holder)
    assert text == (
        '{"root_index":2,"nodes":[{"type":"testing.TestCxxIntEnum","data":20},'
        '{"type":"testing.TestCxxStrEnum","data":"*"},'
        '{"type":"testing.TestCxxEnumHolder","data":{"priority":0,"opcode":1}}]}'
    )
    loaded = serialization.from_json_graph_str(text)
    assert loaded.priority.same_as(int_enum.high) and loaded.opcode.same_as(str_enum.mul)
    assert serialization.from_json_graph_str(serialization.to_json_graph_str(int_enum.low)).same_as(int_enum.low)
    node = '{"root_index":0,"nodes":[{"type":"testing.%s","data":%s}]}'
    assert error_of(serialization.from_json_graph_str, node % ("TestCxxIntEnum", "99")) == (
        "ValueError",
        "Enum `testing.TestCxxIntEnum` has no instance with index 99",
    )
    assert error_of(serialization.from_json_graph_str, node % ("TestCxxStrEnum", '"add"')) == (
        "ValueError",
        "Enum `testing.TestCxxStrEnum` has no instance with index add",
    )
    assert error_of(serialization.from_json_graph_str, node % ("TestCxxIntEnum", '"low"')) == (
        "TypeError",
        "Cannot convert from type `ffi.SmallStr` to `int`",
    )
