package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A request the server refuses, as OpenAI's API refuses it: an HTTP status and the body
 * {@code {"error":{"message":...,"type":...,"param":...,"code":...}}}. Thrown anywhere a request is handled; the
 * router turns it into the response (or, once a stream has begun, into an SSE error event).
 */
final class ApiError extends RuntimeException {
    static final String INVALID_REQUEST = "invalid_request_error";

    final int status;
    final String type, param, code;

    ApiError(int status, String type, String message, String param, String code) {
        super(message, null, false, false);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    /** 400: a bad value or field, named by {@code param}. */
    static ApiError invalid(String message, String param) { return new ApiError(400, INVALID_REQUEST, message, param, null); }

    /** 400 with OpenAI's code for a bad value. */
    static ApiError invalidValue(String message, String param) { return new ApiError(400, INVALID_REQUEST, message, param, "invalid_value"); }

    /** 400: a parameter OpenAI has but Kiln does not support (with a value other than the default). */
    static ApiError unsupported(String message, String param) { return new ApiError(400, INVALID_REQUEST, message, param, "unsupported_parameter"); }

    static ApiError unauthorized(String message) { return new ApiError(401, INVALID_REQUEST, message, null, "invalid_api_key"); }

    static ApiError notFound(String message, String code) { return new ApiError(404, INVALID_REQUEST, message, null, code); }

    static ApiError methodNotAllowed(String message) { return new ApiError(405, INVALID_REQUEST, message, null, "method_not_allowed"); }

    static ApiError tooLarge(String message) { return new ApiError(413, INVALID_REQUEST, message, null, "request_too_large"); }

    static ApiError queueFull(String message) { return new ApiError(429, "rate_limit_error", message, null, "queue_full"); }

    static ApiError unavailable(String message, String code) { return new ApiError(503, "server_error", message, null, code); }

    static ApiError internal(String message) { return new ApiError(500, "server_error", message, null, "internal_error"); }

    /** The JSON body. */
    ObjectNode body() {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        ObjectNode e = root.putObject("error");
        e.put("message", getMessage());
        e.put("type", type);
        e.put("param", param);
        e.put("code", code);
        return root;
    }
}
