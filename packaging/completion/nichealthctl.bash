# bash completion for nichealthctl(1)

_nichealthctl() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="status ports port events ack reload check wait-ready validate topology"
    local flags="--json --bus-address --since --follow --timeout --perfdata --help --version"
    # Counter names of the built-in table; custom ones can still be typed.
    local counters="link_downed excessive_buffer_overrun_errors local_link_integrity_errors
        rnr_nak_retry_err symbol_error symbol_error_fatal link_error_recovery port_rcv_errors
        out_of_sequence local_ack_timeout_err port_xmit_discards port_xmit_wait
        roce_slow_restart carrier_changes"
    local ibclass=/sys/class/infiniband

    # Find the sub-command and the positional arguments after it.
    local cmd="" i
    local -a args=()
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --since|--timeout|--bus-address) ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=${words[i]}; else args+=("${words[i]}"); fi ;;
        esac
    done

    case $prev in
        --since|--timeout|--bus-address) return ;;
    esac

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--json --bus-address --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    case $cmd in
        port|ack)
            case ${#args[@]} in
                0) COMPREPLY=($(compgen -W "$(ls "$ibclass" 2>/dev/null)" -- "$cur")) ;;
                1) COMPREPLY=($(compgen -W "$(ls "$ibclass/${args[0]}/ports" 2>/dev/null)" -- "$cur")) ;;
                2) [[ $cmd == ack ]] && COMPREPLY=($(compgen -W "$counters" -- "$cur")) ;;
            esac
            ;;
        events) COMPREPLY=($(compgen -W "--since --follow --json" -- "$cur")) ;;
        check) COMPREPLY=($(compgen -W "--perfdata --json" -- "$cur")) ;;
        wait-ready) COMPREPLY=($(compgen -W "--timeout --json" -- "$cur")) ;;
        validate) COMPREPLY=($(compgen -f -- "$cur")) ;;
        topology)
            if [[ ${#args[@]} -eq 0 ]]; then
                COMPREPLY=($(compgen -W "parse collect show" -- "$cur"))
            elif [[ ${args[0]} == parse ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            ;;
        *) COMPREPLY=($(compgen -W "$flags" -- "$cur")) ;;
    esac
} && complete -F _nichealthctl nichealthctl
