// SPDX-License-Identifier: BSL-1.0
#include "engine/request.hpp"

#include <cassert>
#include <string_view>

namespace redlock::detail {

void append_eval_form(std::string& out, const command& cmd)
{
    assert(cmd.script != nullptr);
    const std::string_view payload = cmd.payload;
    // EVAL takes the same arguments as EVALSHA, with the text in place of the SHA-1: the
    // array's header and the arguments after the SHA-1 stay as they are.
    const std::size_t args_at =
        cmd.script_at + resp::bulk_size("EVALSHA") + resp::bulk_size(cmd.script->sha);
    out.append(payload.substr(0, cmd.script_at));
    resp::append_bulk(out, "EVAL");
    resp::append_bulk(out, cmd.script->text);
    out.append(payload.substr(args_at));
}

}  // namespace redlock::detail
