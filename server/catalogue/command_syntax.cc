#include "server/catalogue/command_syntax.h"

#include <algorithm>
#include <map>

namespace bloomgate {

// One line per command, sorted by name, but for the rows that carry their
// own: a filter family's, declared in its family record
// (catalogue/filter_family.h), with its SCANDUMP and LOADCHUNK's from
// commands/family_shared/family_rows.h. Lines
// follow Redis 7's and RedisBloom's documented syntax where the command is
// theirs, with Redis's argument names; a command's own README entry says
// what each does.
const std::vector<CommandSyntax>& CommandSyntaxTable() {
  static const std::vector<CommandSyntax> table = {
      {"acl", "", ""},
      {"acl|cat", "[category]", ""},
      {"acl|deluser", "username [username ...]", ""},
      {"acl|getuser", "username", ""},
      {"acl|help", "", ""},
      {"acl|list", "", ""},
      {"acl|log", "[count|RESET]", "count:integer"},
      {"acl|setuser", "username [rule [rule ...]]", ""},
      {"acl|users", "", ""},
      {"acl|whoami", "", ""},
      {"asking", "", ""},
      {"auth", "[username] password", ""},
      {"bgrewriteaof", "", ""},
      {"bgsave", "[SCHEDULE]", ""},
      {"bloomgate.health", "key", ""},
      {"client", "", ""},
      {"client|getname", "", ""},
      {"client|help", "", ""},
      {"client|id", "", ""},
      {"client|info", "", ""},
      {"client|kill",
       "<ip:port|[ID client-id] [TYPE <NORMAL|MASTER|SLAVE|REPLICA|PUBSUB>] [USER username] "
       "[ADDR ip:port] [LADDR ip:port] [SKIPME <YES|NO>] [MAXAGE maxage]>",
       "client-id:integer maxage:integer"},
      {"client|list", "[TYPE <NORMAL|MASTER|REPLICA|PUBSUB>] [ID client-id [client-id ...]]",
       "client-id:integer"},
      {"client|no-evict", "<ON|OFF>", ""},
      {"client|pause", "timeout [WRITE|ALL]", "timeout:integer"},
      {"client|setinfo", "<LIB-NAME libname|LIB-VER libver>", ""},
      {"client|setname", "connection-name", ""},
      {"client|unpause", "", ""},
      {"cluster", "", ""},
      {"cluster|addslots", "slot [slot ...]", "slot:integer"},
      {"cluster|addslotsrange", "start-slot end-slot [start-slot end-slot ...]", "start-slot:integer end-slot:integer"},
      {"cluster|bumpepoch", "", ""},
      {"cluster|count-failure-reports", "node-id", ""},
      {"cluster|countkeysinslot", "slot", "slot:integer"},
      {"cluster|delslots", "slot [slot ...]", "slot:integer"},
      {"cluster|delslotsrange", "start-slot end-slot [start-slot end-slot ...]", "start-slot:integer end-slot:integer"},
      {"cluster|failover", "[FORCE|TAKEOVER]", ""},
      {"cluster|flushslots", "", ""},
      {"cluster|forget", "node-id", ""},
      {"cluster|getkeysinslot", "slot count", "slot:integer count:integer"},
      {"cluster|help", "", ""},
      {"cluster|info", "", ""},
      {"cluster|keyslot", "key", ""},
      {"cluster|links", "", ""},
      {"cluster|meet", "ip port [cluster-bus-port]", "port:integer cluster-bus-port:integer"},
      {"cluster|myid", "", ""},
      {"cluster|nodes", "", ""},
      {"cluster|replicas", "node-id", ""},
      {"cluster|replicate", "node-id", ""},
      {"cluster|reset", "[HARD|SOFT]", ""},
      {"cluster|saveconfig", "", ""},
      {"cluster|set-config-epoch", "config-epoch", "config-epoch:integer"},
      {"cluster|setslot", "slot <IMPORTING node-id|MIGRATING node-id|NODE node-id|STABLE>", "slot:integer"},
      {"cluster|shards", "", ""},
      {"cluster|slaves", "node-id", ""},
      {"cluster|slots", "", ""},
      {"command", "", ""},
      {"command|count", "", ""},
      {"command|docs", "[command-name [command-name ...]]", ""},
      {"command|getkeys", "command [arg [arg ...]]", ""},
      {"command|help", "", ""},
      {"command|info", "[command-name [command-name ...]]", ""},
      {"command|list", "[FILTERBY <MODULE module-name|ACLCAT category|PATTERN pattern>]", ""},
      {"config", "", ""},
      {"config|get", "parameter [parameter ...]", ""},
      {"config|help", "", ""},
      {"config|resetstat", "", ""},
      {"config|rewrite", "", ""},
      {"config|set", "parameter value [parameter value ...]", ""},
      {"copy", "source destination [DB destination-db] [REPLACE]",
       "source:key destination:key destination-db:integer"},
      {"dbsize", "", ""},
      {"debug", "", ""},
      {"debug|digest-value", "key [key ...]", ""},
      {"debug|help", "", ""},
      {"del", "key [key ...]", ""},
      {"dump", "key", ""},
      {"discard", "", ""},
      {"echo", "message", ""},
      {"exec", "", ""},
      {"expire", "key seconds [NX|XX|GT|LT]", "seconds:integer"},
      {"expireat", "key unix-time-seconds [NX|XX|GT|LT]", "unix-time-seconds:unix-time"},
      {"expiretime", "key", ""},
      {"exists", "key [key ...]", ""},
      {"flushall", "[ASYNC|SYNC]", ""},
      {"flushdb", "[ASYNC|SYNC]", ""},
      {"hello", "[protover [AUTH username password] [SETNAME clientname]]",
       "protover:integer"},
      {"info", "[section [section ...]]", ""},
      {"keys", "pattern", ""},
      {"lastsave", "", ""},
      {"latency", "", ""},
      {"latency|help", "", ""},
      {"latency|histogram", "[command [command ...]]", ""},
      {"latency|history", "event", ""},
      {"latency|latest", "", ""},
      {"latency|reset", "[event [event ...]]", ""},
      {"memory", "", ""},
      {"migrate",
       "host port key destination-db timeout [COPY] [REPLACE] [AUTH password] "
       "[AUTH2 username password] [KEYS key [key ...]]",
       "port:integer destination-db:integer timeout:integer"},
      {"memory|doctor", "", ""},
      {"memory|help", "", ""},
      {"memory|stats", "", ""},
      {"memory|usage", "key [SAMPLES count]", "count:integer"},
      {"module", "", ""},
      {"module|help", "", ""},
      {"module|list", "", ""},
      {"monitor", "", ""},
      {"multi", "", ""},
      {"object", "", ""},
      {"object|encoding", "key", ""},
      {"object|freq", "key", ""},
      {"object|help", "", ""},
      {"object|idletime", "key", ""},
      {"object|refcount", "key", ""},
      {"persist", "key", ""},
      {"pexpire", "key milliseconds [NX|XX|GT|LT]", "milliseconds:integer"},
      {"pexpireat", "key unix-time-milliseconds [NX|XX|GT|LT]",
       "unix-time-milliseconds:unix-time"},
      {"pexpiretime", "key", ""},
      {"ping", "[message]", ""},
      {"psubscribe", "pattern [pattern ...]", ""},
      {"psync", "replicationid offset", "offset:integer"},
      {"publish", "channel message", ""},
      {"pubsub", "", ""},
      {"pubsub|channels", "[pattern]", ""},
      {"pubsub|help", "", ""},
      {"pubsub|numpat", "", ""},
      {"pubsub|numsub", "[channel [channel ...]]", ""},
      {"punsubscribe", "[pattern [pattern ...]]", ""},
      {"pttl", "key", ""},
      {"quit", "", ""},
      {"randomkey", "", ""},
      {"readonly", "", ""},
      {"readwrite", "", ""},
      {"rename", "key newkey", "newkey:key"},
      {"renamenx", "key newkey", "newkey:key"},
      {"replconf", "", ""},
      {"replicaof", "host port", "port:integer"},
      {"reset", "", ""},
      {"role", "", ""},
      {"restore", "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
       "ttl:integer seconds:integer frequency:integer"},
      {"restore-asking", "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
       "ttl:integer seconds:integer frequency:integer"},
      {"restore-chunk", "key offset chunk [COMMIT ttl [REPLACE]]", "offset:integer ttl:integer"},
      {"save", "", ""},
      {"scan", "cursor [MATCH pattern] [COUNT count] [TYPE type]",
       "cursor:integer count:integer"},
      {"select", "index", "index:integer"},
      {"shutdown", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]", ""},
      {"slaveof", "host port", "port:integer"},
      {"slowlog", "", ""},
      {"slowlog|get", "[count]", "count:integer"},
      {"slowlog|help", "", ""},
      {"slowlog|len", "", ""},
      {"slowlog|reset", "", ""},
      {"subscribe", "channel [channel ...]", ""},
      {"time", "", ""},
      {"touch", "key [key ...]", ""},
      {"ttl", "key", ""},
      {"type", "key", ""},
      {"unlink", "key [key ...]", ""},
      {"unsubscribe", "[channel [channel ...]]", ""},
      {"unwatch", "", ""},
      {"wait", "numreplicas timeout", "numreplicas:integer timeout:integer"},
      {"watch", "key [key ...]", ""},
  };
  return table;
}

const CommandSyntax* FindCommandSyntax(std::string_view full_name) {
  const std::vector<CommandSyntax>& table = CommandSyntaxTable();
  for (const CommandSyntax& syntax : table) {
    if (syntax.command == full_name) return &syntax;
  }
  return nullptr;
}

std::string_view ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kKey: return "key";
    case ArgType::kString: return "string";
    case ArgType::kInteger: return "integer";
    case ArgType::kDouble: return "double";
    case ArgType::kUnixTime: return "unix-time";
    case ArgType::kPureToken: return "pure-token";
    case ArgType::kOneOf: return "oneof";
    case ArgType::kBlock: return "block";
  }
  return "string";
}

namespace {

// ---------------------------------------------------------------- parse ---
// Tokens: "[", "]", "<", ">", "|" and words. Nodes: a word, or a bracketed
// group of alternatives (each a sequence of nodes).

struct Node {
  std::string word;                           // empty for a group
  bool optional = false;                      // [ ] (else < >)
  std::vector<std::vector<Node>> alternatives;
};

std::vector<std::string> Tokenize(std::string_view line) {
  std::vector<std::string> tokens;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) tokens.push_back(std::move(word));
    word.clear();
  };
  for (char c : line) {
    if (c == ' ') {
      flush();
    } else if (c == '[' || c == ']' || c == '<' || c == '>' || c == '|') {
      flush();
      tokens.emplace_back(1, c);
    } else {
      word += c;
    }
  }
  flush();
  return tokens;
}

bool IsTokenWord(std::string_view word) {
  bool letter = false;
  for (char c : word) {
    if (c >= 'a' && c <= 'z') return false;
    if (c >= 'A' && c <= 'Z') letter = true;
  }
  return letter;
}

std::string Lower(std::string_view word) {
  std::string lower(word);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

class Parser {
 public:
  Parser(std::vector<std::string> tokens, std::map<std::string, ArgType, std::less<>> types)
      : tokens_(std::move(tokens)), types_(std::move(types)) {}

  bool Parse(std::vector<CommandArgument>* out, std::string* error) {
    std::vector<std::vector<Node>> top = Alternatives("");
    if (error_.empty() && pos_ != tokens_.size()) error_ = "unbalanced '" + tokens_[pos_] + "'";
    if (error_.empty()) *out = Build(top);
    for (const auto& [name, type] : types_) {
      if (error_.empty() && !used_.count(name)) error_ = "types name no argument '" + name + "'";
    }
    *error = error_;
    return error_.empty();
  }

 private:
  std::vector<std::vector<Node>> Alternatives(std::string_view closer) {
    std::vector<std::vector<Node>> alternatives(1);
    while (pos_ < tokens_.size() && error_.empty()) {
      const std::string& token = tokens_[pos_];
      if (token == "]" || token == ">") {
        if (token != closer) error_ = "unexpected '" + token + "'";
        return alternatives;
      }
      ++pos_;
      if (token == "|") {
        alternatives.emplace_back();
      } else if (token == "[" || token == "<") {
        Node group;
        group.optional = token == "[";
        group.alternatives = Alternatives(group.optional ? "]" : ">");
        if (pos_ >= tokens_.size()) {
          error_ = "unclosed '" + token + "'";
        } else {
          ++pos_;
        }
        alternatives.back().push_back(std::move(group));
      } else {
        alternatives.back().push_back(Node{.word = token});
      }
    }
    if (!closer.empty() && error_.empty()) error_ = "unclosed group";
    return alternatives;
  }

  ArgType TypeOf(const std::string& name) {
    auto it = types_.find(name);
    if (it != types_.end()) {
      used_[name] = true;
      return it->second;
    }
    return name == "key" ? ArgType::kKey : ArgType::kString;
  }

  // Several arguments as one: a block named after its members.
  static CommandArgument Block(std::vector<CommandArgument> members) {
    CommandArgument block{.type = ArgType::kBlock};
    for (const CommandArgument& member : members) {
      block.name += (block.name.empty() ? "" : "_") + member.name;
    }
    block.children = std::move(members);
    return block;
  }

  std::vector<CommandArgument> Build(const std::vector<std::vector<Node>>& alternatives) {
    if (alternatives.size() == 1) return BuildSequence(alternatives[0]);
    CommandArgument oneof{.type = ArgType::kOneOf};
    for (const std::vector<Node>& alternative : alternatives) {
      std::vector<CommandArgument> built = BuildSequence(alternative);
      if (built.empty()) {
        error_ = "an empty alternative";
        return {};
      }
      oneof.children.push_back(built.size() == 1 ? std::move(built[0]) : Block(std::move(built)));
      oneof.name += (oneof.name.empty() ? "" : "-") + oneof.children.back().name;
    }
    return {std::move(oneof)};
  }

  std::vector<CommandArgument> BuildSequence(const std::vector<Node>& nodes) {
    std::vector<CommandArgument> args;
    for (size_t i = 0; i < nodes.size() && error_.empty(); ++i) {
      const Node& node = nodes[i];
      if (!node.word.empty()) {
        if (node.word == "...") {
          error_ = "'...' outside a repetition";
        } else if (IsTokenWord(node.word)) {
          const bool valued = i + 1 < nodes.size() && !nodes[i + 1].word.empty() &&
                              nodes[i + 1].word != "..." && !IsTokenWord(nodes[i + 1].word);
          if (valued) {
            ++i;
            args.push_back({.name = nodes[i].word, .type = TypeOf(nodes[i].word),
                            .token = node.word});
          } else {
            args.push_back({.name = Lower(node.word), .type = ArgType::kPureToken,
                            .token = node.word});
          }
        } else {
          args.push_back({.name = node.word, .type = TypeOf(node.word)});
        }
        continue;
      }
      const auto& alts = node.alternatives;
      if (node.optional && alts.size() == 1 && !alts[0].empty() && alts[0].back().word == "...") {
        Repeat(std::vector<Node>(alts[0].begin(), alts[0].end() - 1), &args);
        continue;
      }
      std::vector<CommandArgument> built = Build(alts);
      if (built.empty()) {
        if (error_.empty()) error_ = "an empty group";
        continue;
      }
      CommandArgument arg = built.size() == 1 ? std::move(built[0]) : Block(std::move(built));
      if (node.optional) arg.optional = true;
      args.push_back(std::move(arg));
    }
    return args;
  }

  // "[x ...]" after x: the last arguments repeat. "TOKEN x [x ...]" repeats
  // the value; "TOKEN x [TOKEN x ...]" the token too.
  void Repeat(const std::vector<Node>& repeated, std::vector<CommandArgument>* args) {
    std::vector<CommandArgument> again = BuildSequence(repeated);
    if (again.empty() || again.size() > args->size()) {
      error_ = "'...' repeats nothing before it";
      return;
    }
    std::vector<CommandArgument> last(args->end() - static_cast<long>(again.size()), args->end());
    args->resize(args->size() - again.size());
    CommandArgument arg = last.size() == 1 ? std::move(last[0]) : Block(std::move(last));
    CommandArgument bare = arg;
    bare.token.clear();
    if (RenderArguments({bare}) == RenderArguments(again)) {
      arg.multiple = true;
    } else if (!arg.token.empty() && RenderArguments({arg}) == RenderArguments(again)) {
      arg.multiple = arg.multiple_token = true;
    } else {
      error_ = "'" + RenderArguments(again) + " ...' does not repeat what is before it";
      return;
    }
    args->push_back(std::move(arg));
  }

  std::vector<std::string> tokens_;
  size_t pos_ = 0;
  std::map<std::string, ArgType, std::less<>> types_;
  std::map<std::string, bool, std::less<>> used_;
  std::string error_;
};

bool ParseTypes(std::string_view text, std::map<std::string, ArgType, std::less<>>* out,
                std::string* error) {
  static const std::map<std::string_view, ArgType> kNames = {
      {"key", ArgType::kKey},         {"string", ArgType::kString},
      {"integer", ArgType::kInteger}, {"double", ArgType::kDouble},
      {"unix-time", ArgType::kUnixTime},
  };
  for (const std::string& entry : Tokenize(text)) {
    const size_t colon = entry.rfind(':');
    auto type = colon == std::string::npos ? kNames.end() : kNames.find(entry.substr(colon + 1));
    if (type == kNames.end()) {
      *error = "bad type entry '" + entry + "'";
      return false;
    }
    (*out)[entry.substr(0, colon)] = type->second;
  }
  return true;
}

void NumberKeys(int key_specs, int* next, std::vector<CommandArgument>* args) {
  for (CommandArgument& arg : *args) {
    if (arg.type == ArgType::kKey) {
      arg.key_spec_index = std::min(*next, std::max(key_specs - 1, 0));
      ++*next;
    }
    NumberKeys(key_specs, next, &arg.children);
  }
}

std::string RenderOne(const CommandArgument& arg) {
  std::string repeat;
  switch (arg.type) {
    case ArgType::kOneOf:
    case ArgType::kBlock:
      for (const CommandArgument& child : arg.children) {
        if (!repeat.empty()) repeat += arg.type == ArgType::kOneOf ? "|" : " ";
        repeat += RenderOne(child);
      }
      break;
    case ArgType::kPureToken: break;
    default: repeat = arg.name;
  }
  std::string token = arg.token;
  if (!token.empty() && !repeat.empty()) token += " ";
  std::string text = arg.optional ? "[" : "";
  text += token + repeat;
  if (arg.multiple) text += " [" + (arg.multiple_token ? token : "") + repeat + " ...]";
  if (arg.optional) text += "]";
  return text;
}

}  // namespace

bool ParseCommandSyntax(const CommandSyntax& syntax, int key_specs,
                        std::vector<CommandArgument>* out, std::string* error) {
  std::map<std::string, ArgType, std::less<>> types;
  if (!ParseTypes(syntax.types, &types, error)) return false;
  Parser parser(Tokenize(syntax.line), std::move(types));
  if (!parser.Parse(out, error)) return false;
  int next = 0;
  NumberKeys(key_specs, &next, out);
  return true;
}

std::string RenderArguments(const std::vector<CommandArgument>& arguments) {
  std::string text;
  for (const CommandArgument& arg : arguments) {
    if (!text.empty()) text += " ";
    text += RenderOne(arg);
  }
  return text;
}

}  // namespace bloomgate
