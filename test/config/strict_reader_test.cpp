// The one reader of every YAML and JSON input (config/yaml_file.hpp, config/json_file.hpp): keys
// twice at any depth, text that is not UTF-8 and keys that are not names are refused with the
// file, the path and the line; JSON is read as JSON (its escapes, its kinds, its positions).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/inputs.hpp"
#include "config/json_file.hpp"
#include "config/yaml_file.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

class StrictReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("perfsweep_strict_reader_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path file(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // The message load_yaml_file gives for `text` in a file `name`, or "" when it is accepted.
  std::string error(const std::string& name, const std::string& text) const {
    const fs::path p = file(name, text);
    try {
      load_yaml_file(p);
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(p.string() + ": ", 0), 0u) << "the message names the file: " << what;
      return what.substr(p.string().size() + 2);
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(StrictReader, KeysTwiceAreRefusedAtAnyDepth) {
  // Mixtral's experts given twice: the first (runtimes) or the last (models) would win silently.
  EXPECT_EQ(error("m.yaml", "name: x\nmoe: {experts: 8, experts: 64}\n"), "moe: duplicate key 'experts' (line 2)");
  EXPECT_EQ(error("m.yaml", "a:\n  - b: {c: 1}\n  - b:\n      c: 1\n      c: 2\n"), "a[1].b: duplicate key 'c' (line 5)");
  EXPECT_EQ(error("m.yaml", "depth: 1\ndepth: 2\n"), "duplicate key 'depth' (line 2)");
  EXPECT_EQ(error("c.json", "{\"a\": 1, \"moe\": {\"experts\": 8,\n \"experts\": 64}}"),
            "duplicate key 'experts' in moe (line 2, column 2)");
  EXPECT_EQ(error("c.json", "{\"l\": [{\"x\": 1}, {\"x\": 1, \"x\": 2}]}"), "duplicate key 'x' in l[1] (line 1, column 27)");
  EXPECT_EQ(error("ok.yaml", "a: {b: 1}\nc: {b: 1}\n"), "");  // one key in two mappings is no duplicate
}

TEST_F(StrictReader, TextMustBeUtf8AndKeysNames) {
  EXPECT_EQ(error("m.yaml", "name: \"a\\xffb\"\n"), "");  // YAML's \x escape names U+00FF, which is UTF-8
  EXPECT_EQ(error("m.yaml", "name: a\xFF" "b\n"), "name: not UTF-8 text, at byte 1 (0xff): 'a\\xffb' (line 1)");
  EXPECT_EQ(error("m.json", "{\"name\": \"a\xC0\x80\"}"), "malformed JSON at line 1, column 12: not UTF-8 text (byte 0xc0)");
  EXPECT_EQ(error("k.yaml", "\"a\\x1b[31m\": 1\n"),
            "a key must be a plain name (at most 256 bytes, no control characters), got 'a\\x1b[31m' (line 1)");
  EXPECT_EQ(error("k.yaml", "[a, b]: 1\n"), "a key must be a plain name, got a list (line 1)");
  const std::string long_key(300, 'k');
  EXPECT_NE(error("k.yaml", long_key + ": 1\n").find("... (300 bytes in all)"), std::string::npos);
}

TEST_F(StrictReader, JsonIsReadAsJson) {
  // Python's json.dump writes an emoji as a surrogate pair
  const YAML::Node root = load_yaml_file(file("c.json", R"({"name": "\ud83d\ude00 \u00e9\n", "n": 4096, "s": "4096",
                                                          "t": true, "z": null, "l": [1.5e-3, -0]})"));
  EXPECT_EQ(root["name"].Scalar(), "\xF0\x9F\x98\x80 \xC3\xA9\n");
  EXPECT_TRUE(yaml_is_text(root["name"]));
  EXPECT_FALSE(yaml_is_text(root["n"]));
  EXPECT_EQ(root["n"].as<std::int64_t>(), 4096);
  EXPECT_TRUE(yaml_is_text(root["s"]));  // "4096" is text, not a number
  EXPECT_EQ(root["t"].Scalar(), "true");
  EXPECT_TRUE(root["z"].IsNull());
  EXPECT_EQ(root["l"][0].Scalar(), "1.5e-3");
  EXPECT_EQ(root["l"][1].Scalar(), "-0");
}

TEST_F(StrictReader, MalformedJsonNamesLineAndColumn) {
  EXPECT_EQ(error("a.json", "{\"a\": 1,}"), "malformed JSON at line 1, column 9: a key (a string) expected, found '}'");
  EXPECT_EQ(error("a.json", "{\"a\": NaN}"),
            "malformed JSON at line 1, column 7: a value expected (an object, a list, a string, a number, true, false "
            "or null), found 'N'");
  EXPECT_EQ(error("a.json", "{\"a\":\n 01}"), "malformed JSON at line 2, column 3: a number with a leading zero");
  EXPECT_EQ(error("a.json", "{\"a\": \"\\ud83d\"}"),
            "malformed JSON at line 1, column 14: a high surrogate (\\ud83d) without a low one after it");
  EXPECT_EQ(error("a.json", "{\"a\": \"\\ude00\"}"),
            "malformed JSON at line 1, column 14: a low surrogate (\\ude00) without a high one before it");
  EXPECT_EQ(error("a.json", "{\"a\": \"x\ty\"}"),
            "malformed JSON at line 1, column 9: a control character (0x09) in a string; write it as an escape");
  EXPECT_EQ(error("a.json", "{\"a\": 1} {}"), "malformed JSON at line 1, column 10: text after the JSON value");
  EXPECT_EQ(error("a.json", "{\"a\": \"open"), "malformed JSON at line 1, column 12: the string is not closed");
  EXPECT_EQ(error("a.json", std::string(300, '[') + std::string(300, ']')),
            "malformed JSON at line 1, column 258: nested deeper than 256 levels");
}

TEST_F(StrictReader, InputsMustBeRegularFilesOfBoundedSize) {
  const fs::path fifo = dir_ / "model.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_yaml_file(fifo);  // never opened for blocking reads: it would wait for a writer
    ADD_FAILURE() << "a FIFO was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fifo.string() + ": is a FIFO; an input must be a regular file");
  }
  // as a --model, a FIFO is named as one, not as a missing file
  try {
    read_model(fifo.string());
    ADD_FAILURE() << "a FIFO was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fifo.string() + ": is a FIFO; an input must be a regular file");
  }
  try {
    load_yaml_file(dir_ / "absent.yaml");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "absent.yaml").string() + ": no such file");
  }
}

TEST_F(StrictReader, EchoedValuesAreCapped) {
  const YAML::Node n = YAML::Node(std::string(20'000'000, 'v'));
  EXPECT_LT(yaml_shown(n).size(), kShownBytes + 40);
}

TEST_F(StrictReader, NamesThatBecomeGroupsAreChecked) {
  const auto refused = [](const std::string& name, NameUse use) {
    try {
      check_name("f.yaml: name", name, use);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refused("A100", NameUse::kGroup), "");
  EXPECT_EQ(refused("x&<y>.v2", NameUse::kGroup), "");  // escaped where written (XML, HTML, JSON)
  EXPECT_NE(refused("a/b", NameUse::kGroup).find("got 'a/b': a '/'"), std::string::npos);
  EXPECT_EQ(refused("../../x", NameUse::kLabel), "");  // a model's name: an attribute, and a safe file name part
  EXPECT_NE(refused("..", NameUse::kGroup).find("a folder's name"), std::string::npos);
  EXPECT_NE(refused("a\nb", NameUse::kLabel).find("got 'a\\x0ab': a control character"), std::string::npos);
  EXPECT_NE(refused("", NameUse::kLabel).find("empty"), std::string::npos);
  EXPECT_NE(refused("\xFF", NameUse::kLabel).find("not UTF-8"), std::string::npos);
  EXPECT_NE(refused(std::string(257, 'n'), NameUse::kLabel).find("too long"), std::string::npos);
}

}  // namespace
}  // namespace perfsweep
